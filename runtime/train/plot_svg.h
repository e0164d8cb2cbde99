// `plot`: training curves as a standalone SVG (no plotting dependency), one
// panel each for loss and nll, perplexity (log scale), the learning rate
// and validation BLEU, with validation curves beside the training ones when
// the CSV has them.
#ifndef TFM_RUNTIME_TRAIN_PLOT_SVG_H_
#define TFM_RUNTIME_TRAIN_PLOT_SVG_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/train/metrics_csv.h"

namespace tfm {

// The SVG document for `table` (columns as in training_metrics.h; missing
// columns leave their curves, and panels without curves, out). Each panel's
// plot area is a <g class="panel"> whose data-* attributes give its data
// ranges, y scale and pixel rectangle, and each curve a <polyline
// class="curve" data-column="...">, so tools and tests can read the points
// back. FailedPrecondition if no column has a value to plot.
absl::StatusOr<std::string> RenderPlotSvg(const MetricsTable& table);

// Reads the metrics CSV and writes the plot to `svg_path` atomically.
absl::Status WritePlotSvg(const std::string& csv_path, const std::string& svg_path);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_PLOT_SVG_H_
