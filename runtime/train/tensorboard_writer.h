// Scalars in TensorBoard's event file format: TFRecord framing (length,
// masked CRC-32C of the length, the Event proto, masked CRC-32C of it) of
// Event protos, the first carrying the file version. Each event is written
// with one system call as it comes, so a live TensorBoard shows it at once
// and a crash loses at most the event being written.
#ifndef TFM_RUNTIME_TRAIN_TENSORBOARD_WRITER_H_
#define TFM_RUNTIME_TRAIN_TENSORBOARD_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/train/file_writers.h"
#include "runtime/train/training_metrics.h"

namespace tfm {

class TensorBoardWriter {
 public:
  // Creates log_dir (if needed) and log_dir/events.out.tfevents.<seconds>.
  // <hostname>, TensorBoard's naming. A resumed run starts a new file;
  // TensorBoard drops the old file's events from the resumed update on.
  static absl::StatusOr<TensorBoardWriter> Create(const std::string& log_dir);
  // One event at `step` holding each value as a scalar tagged
  // `prefix` + name ("train/loss"); the "update" column, being the step, is
  // left out.
  absl::Status AddScalars(int64_t step, const MetricRow& values, const std::string& prefix = "");

  const std::string& path() const { return file_.path(); }

 private:
  explicit TensorBoardWriter(AppendOnlyFile file) : file_(std::move(file)) {}
  absl::Status WriteRecord(const std::string& data);

  AppendOnlyFile file_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_TENSORBOARD_WRITER_H_
