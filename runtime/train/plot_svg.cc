#include "runtime/train/plot_svg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/file_io.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// Page geometry, in pixels.
constexpr double kWidth = 900;
constexpr double kPanelHeight = 280;
constexpr double kLeft = 90;    // Room for y tick labels.
constexpr double kRight = 170;  // Room for the legend.
constexpr double kTop = 40;     // The panel title.
constexpr double kBottom = 50;  // x tick labels and the axis label.
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr double kPlotHeight = kPanelHeight - kTop - kBottom;

struct Curve {
  const char* column;
  const char* color;
};

struct PanelSpec {
  const char* title;
  const char* y_label;
  bool log_scale;
  std::vector<Curve> curves;
};

const std::vector<PanelSpec>& Panels() {
  static const std::vector<PanelSpec> panels = {
      {"Loss",
       "nats per token",
       false,
       {{"loss", "#1f77b4"},
        {"nll", "#ff7f0e"},
        {"valid_loss", "#2ca02c"},
        {"valid_nll", "#d62728"}}},
      {"Perplexity",
       "perplexity (log scale)",
       true,
       {{"ppl", "#9467bd"}, {"valid_ppl", "#8c564b"}}},
      {"Learning rate", "learning rate", false, {{"lr", "#17becf"}}},
      {"Validation BLEU", "BLEU", false, {{"valid_bleu", "#e377c2"}}},
  };
  return panels;
}

struct Point {
  double x;
  double y;  // log10 of the value on a log-scale panel.
};

// The plottable points of a column: finite values, positive on a log scale.
std::vector<Point> PointsOf(const MetricsTable& table, const char* column, bool log_scale) {
  std::vector<Point> points;
  const int index = table.ColumnIndex(column);
  if (index < 0) return points;
  for (const auto& row : table.rows) {
    if (!row[index].has_value() || !std::isfinite(*row[index])) continue;
    if (log_scale && *row[index] <= 0) continue;
    points.push_back({*row[0], log_scale ? std::log10(*row[index]) : *row[index]});
  }
  return points;
}

struct Axis {
  double low;
  double high;
  std::vector<double> ticks;  // In axis units (log10 on a log scale).
};

// Ticks at 1, 2 or 5 times a power of ten, about five across the range,
// with the range widened to whole ticks.
Axis LinearAxis(double low, double high) {
  if (high <= low) {
    const double pad = low == 0 ? 1 : std::abs(low) * 0.1;
    low -= pad;
    high += pad;
  }
  const double rough = (high - low) / 5;
  const double power = std::pow(10, std::floor(std::log10(rough)));
  double step = power;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * power;
    if (step >= rough) break;
  }
  Axis axis{std::floor(low / step) * step, std::ceil(high / step) * step, {}};
  // Counted, not summed, so rounding does not drift across the ticks.
  for (int i = 0; axis.low + i * step <= axis.high + step / 2; ++i) {
    const double tick = axis.low + i * step;
    axis.ticks.push_back(std::abs(tick) < step * 1e-9 ? 0 : tick);
  }
  return axis;
}

// Ticks at round values (1, 2 and 5 times powers of ten; every integer
// multiple when that leaves fewer than three), the range widened to the
// nearest ones outside the data. In log10 units.
Axis LogAxis(double low, double high) {
  for (const std::vector<double>& mantissas :
       {std::vector<double>{1, 2, 5}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    std::vector<double> round;  // log10 of round values, ascending.
    for (double power = std::floor(low) - 1; power <= std::ceil(high) + 1; ++power) {
      for (double mantissa : mantissas) round.push_back(power + std::log10(mantissa));
    }
    // Tolerance: log10(2000) must count as log10(2) + 3.
    constexpr double kSlack = 1e-12;
    Axis axis{low, high, {}};
    for (double tick : round) {
      if (tick <= low + kSlack) axis.low = tick;
    }
    for (auto it = round.rbegin(); it != round.rend(); ++it) {
      if (*it >= high - kSlack) axis.high = *it;
    }
    for (double tick : round) {
      if (tick >= axis.low - kSlack && tick <= axis.high + kSlack) axis.ticks.push_back(tick);
    }
    // Over many decades, decades alone keep the labels apart.
    if (axis.ticks.size() > 12) {
      std::vector<double> decades;
      for (double tick : axis.ticks) {
        if (std::abs(tick - std::round(tick)) < kSlack) decades.push_back(tick);
      }
      axis.ticks = decades;
    }
    if (axis.ticks.size() >= 3 || mantissas.size() > 3) {
      if (axis.high <= axis.low) return LinearAxis(low, high);
      return axis;
    }
  }
  return LinearAxis(low, high);
}

std::string TickLabel(double tick, bool log_scale) {
  // %.6g: 10^log10(2) prints as 2, not 2.0000000000000004.
  return absl::StrFormat("%.6g", log_scale ? std::pow(10, tick) : tick);
}

double PixelX(const Axis& axis, double x) {
  return kLeft + (x - axis.low) / (axis.high - axis.low) * kPlotWidth;
}

double PixelY(const Axis& axis, double y, double top) {
  return top + kTop + (axis.high - y) / (axis.high - axis.low) * kPlotHeight;
}

void DrawPanel(const PanelSpec& spec, const std::vector<std::vector<Point>>& curves,
               const Axis& x_axis, double top, std::string* svg) {
  double low = std::numeric_limits<double>::infinity();
  double high = -low;
  for (const auto& points : curves) {
    for (const Point& point : points) {
      low = std::min(low, point.y);
      high = std::max(high, point.y);
    }
  }
  const Axis y_axis = spec.log_scale ? LogAxis(low, high) : LinearAxis(low, high);
  const double plot_top = top + kTop;
  absl::StrAppendFormat(svg,
                        "<text x=\"%g\" y=\"%g\" font-size=\"16\" font-weight=\"bold\">%s</text>\n",
                        kLeft, top + 24, spec.title);
  absl::StrAppendFormat(
      svg,
      "<g class=\"panel\" data-title=\"%s\" data-x-min=\"%.17g\" data-x-max=\"%.17g\" "
      "data-y-min=\"%.17g\" data-y-max=\"%.17g\" data-y-scale=\"%s\" data-left=\"%g\" "
      "data-top=\"%g\" data-width=\"%g\" data-height=\"%g\">\n",
      spec.title, x_axis.low, x_axis.high, y_axis.low, y_axis.high,
      spec.log_scale ? "log" : "linear", kLeft, plot_top, kPlotWidth, kPlotHeight);
  absl::StrAppendFormat(svg,
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
                        "stroke=\"#444\"/>\n",
                        kLeft, plot_top, kPlotWidth, kPlotHeight);
  // Grid lines and tick labels.
  for (double tick : x_axis.ticks) {
    const double x = PixelX(x_axis, tick);
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.2f\" y1=\"%g\" x2=\"%.2f\" y2=\"%g\" stroke=\"#ddd\"/>\n"
                          "<text x=\"%.2f\" y=\"%g\" font-size=\"11\" "
                          "text-anchor=\"middle\">%s</text>\n",
                          x, plot_top, x, plot_top + kPlotHeight, x, plot_top + kPlotHeight + 16,
                          TickLabel(tick, false));
  }
  for (double tick : y_axis.ticks) {
    const double y = PixelY(y_axis, tick, top);
    absl::StrAppendFormat(svg,
                          "<line x1=\"%g\" y1=\"%.2f\" x2=\"%g\" y2=\"%.2f\" stroke=\"#ddd\"/>\n"
                          "<text x=\"%g\" y=\"%.2f\" font-size=\"11\" "
                          "text-anchor=\"end\">%s</text>\n",
                          kLeft, y, kLeft + kPlotWidth, y, kLeft - 6, y + 4,
                          TickLabel(tick, spec.log_scale));
  }
  absl::StrAppendFormat(svg,
                        "<text x=\"%g\" y=\"%g\" font-size=\"12\" text-anchor=\"middle\">update"
                        "</text>\n<text x=\"%g\" y=\"%g\" font-size=\"12\" text-anchor=\"middle\" "
                        "transform=\"rotate(-90 %g %g)\">%s</text>\n",
                        kLeft + kPlotWidth / 2, plot_top + kPlotHeight + 36, 20.0,
                        plot_top + kPlotHeight / 2, 20.0, plot_top + kPlotHeight / 2, spec.y_label);
  // Curves, and their legend entries.
  int legend_row = 0;
  for (size_t c = 0; c < spec.curves.size(); ++c) {
    if (curves[c].empty()) continue;
    absl::StrAppendFormat(svg,
                          "<polyline class=\"curve\" data-column=\"%s\" fill=\"none\" "
                          "stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                          spec.curves[c].column, spec.curves[c].color);
    for (const Point& point : curves[c]) {
      absl::StrAppendFormat(svg, "%.3f,%.3f ", PixelX(x_axis, point.x),
                            PixelY(y_axis, point.y, top));
    }
    svg->append("\"/>\n");
    const double legend_y = plot_top + 12 + 18 * legend_row++;
    absl::StrAppendFormat(svg,
                          "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" "
                          "stroke-width=\"3\"/>\n<text x=\"%g\" y=\"%g\" font-size=\"12\">%s"
                          "</text>\n",
                          kLeft + kPlotWidth + 12, legend_y, kLeft + kPlotWidth + 36, legend_y,
                          spec.curves[c].color, kLeft + kPlotWidth + 42, legend_y + 4,
                          spec.curves[c].column);
  }
  svg->append("</g>\n");
}

}  // namespace

absl::StatusOr<std::string> RenderPlotSvg(const MetricsTable& table) {
  // Which panels have something to draw, and the updates they span.
  std::vector<std::pair<const PanelSpec*, std::vector<std::vector<Point>>>> panels;
  double first = std::numeric_limits<double>::infinity();
  double last = -first;
  for (const PanelSpec& spec : Panels()) {
    std::vector<std::vector<Point>> curves;
    bool any = false;
    for (const Curve& curve : spec.curves) {
      curves.push_back(PointsOf(table, curve.column, spec.log_scale));
      for (const Point& point : curves.back()) {
        first = std::min(first, point.x);
        last = std::max(last, point.x);
        any = true;
      }
    }
    if (any) panels.emplace_back(&spec, std::move(curves));
  }
  if (panels.empty()) {
    return absl::FailedPreconditionError("no metric values to plot (an empty CSV?)");
  }
  const Axis x_axis = LinearAxis(first, last);
  const double height = kPanelHeight * panels.size();
  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
      "viewBox=\"0 0 %g %g\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, height, kWidth, height);
  for (size_t p = 0; p < panels.size(); ++p) {
    DrawPanel(*panels[p].first, panels[p].second, x_axis, p * kPanelHeight, &svg);
  }
  svg.append("</svg>\n");
  return svg;
}

absl::Status WritePlotSvg(const std::string& csv_path, const std::string& svg_path) {
  TFM_ASSIGN_OR_RETURN(MetricsTable table, ReadMetricsCsv(csv_path));
  absl::StatusOr<std::string> svg = RenderPlotSvg(table);
  if (!svg.ok()) {
    return absl::Status(svg.status().code(), absl::StrCat(csv_path, ": ", svg.status().message()));
  }
  return WriteFileAtomically(svg_path, *svg);
}

}  // namespace tfm
