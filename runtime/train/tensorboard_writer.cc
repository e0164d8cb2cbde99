#include "runtime/train/tensorboard_writer.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/data/crc32c.h"
#include "core/status_macros.h"
#include "runtime/train/file_writers.h"
#include "runtime/train/tensorboard_event.pb.h"

namespace tfm {
namespace {

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

std::string LittleEndian(uint64_t value, int bytes) {
  std::string out(bytes, '\0');
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>(value >> (8 * i));
  return out;
}

double NowSeconds() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

}  // namespace

absl::StatusOr<TensorBoardWriter> TensorBoardWriter::Create(const std::string& log_dir) {
  std::error_code error;
  std::filesystem::create_directories(log_dir, error);
  if (error)
    return absl::InternalError(absl::StrCat("cannot create ", log_dir, ": ", error.message()));
  const double now = NowSeconds();
  std::string path =
      absl::StrCat(log_dir, "/events.out.tfevents.", static_cast<int64_t>(now), ".", HostName());
  TFM_ASSIGN_OR_RETURN(AppendOnlyFile file, AppendOnlyFile::Open(path));
  TensorBoardWriter writer(std::move(file));
  tensorboard::Event event;
  event.set_wall_time(now);
  event.set_file_version("brain.Event:2");
  TFM_RETURN_IF_ERROR(writer.WriteRecord(event.SerializeAsString()));
  return writer;
}

absl::Status TensorBoardWriter::AddScalars(int64_t step, const MetricRow& values,
                                           const std::string& prefix) {
  tensorboard::Event event;
  event.set_wall_time(NowSeconds());
  event.set_step(step);
  tensorboard::Summary* summary = event.mutable_summary();
  for (const auto& [name, value] : values) {
    if (name == "update") continue;
    tensorboard::Summary::Value* scalar = summary->add_value();
    scalar->set_tag(prefix + name);
    scalar->set_simple_value(static_cast<float>(value));
  }
  return WriteRecord(event.SerializeAsString());
}

absl::Status TensorBoardWriter::WriteRecord(const std::string& data) {
  const std::string length = LittleEndian(data.size(), 8);
  return file_.Append(absl::StrCat(length, LittleEndian(MaskCrc32c(Crc32c(length)), 4), data,
                                   LittleEndian(MaskCrc32c(Crc32c(data)), 4)));
}

}  // namespace tfm
