#include "runtime/train/plot_svg.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/data/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::remove(path.c_str());
  return path;
}

// A run of 40 updates with validation every 10, through the CSV writer.
std::string WriteRunCsv(bool with_validation) {
  const std::string path = TempPath(with_validation ? "run_valid.csv" : "run.csv");
  MetricsCsvWriter csv =
      MetricsCsvWriter::Open(path, MetricColumns(with_validation ? "bleu" : ""), 0).value();
  for (int update = 1; update <= 40; ++update) {
    TrainingMetrics m;
    m.update = update * 100;
    m.loss = 9.0 * std::exp(-update / 12.0) + 2.0;
    m.nll = m.loss - 0.4;
    m.learning_rate = 1e-3 * std::min(update / 8.0, std::sqrt(8.0 / update));
    EXPECT_TRUE(csv.Append(ToRow(m)).ok());
    if (with_validation && update % 10 == 0) {
      ValidationMetrics v;
      v.update = m.update;
      v.loss = m.loss + 0.3;
      v.nll = m.nll + 0.3;
      v.score_name = "bleu";
      v.score = 30.0 - 3 * v.loss;
      EXPECT_TRUE(csv.Append(ToRow(v)).ok());
    }
  }
  return path;
}

// Parses the SVG as XML (Python's parser) and maps every curve's pixel
// points back to data through its panel's published axes: prints
// "column x y" per point, and "panel title scale" per panel.
constexpr char kReadPlot[] = R"(
import sys, xml.etree.ElementTree as ET
ns = {"svg": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
for panel in root.findall("svg:g[@class='panel']", ns):
    a = {k[5:]: panel.get(k) for k in panel.keys() if k.startswith("data-")}
    print("panel", a["title"].replace(" ", "_"), a["y-scale"], len(panel.findall("svg:text", ns)))
    f = {k: float(v) for k, v in a.items() if k not in ("title", "y-scale")}
    for curve in panel.findall("svg:polyline[@class='curve']", ns):
        for pair in curve.get("points").split():
            px, py = map(float, pair.split(","))
            assert f["left"] <= px <= f["left"] + f["width"], px
            assert f["top"] <= py <= f["top"] + f["height"], py
            x = f["x-min"] + (px - f["left"]) / f["width"] * (f["x-max"] - f["x-min"])
            y = f["y-max"] - (py - f["top"]) / f["height"] * (f["y-max"] - f["y-min"])
            if a["y-scale"] == "log":
                y = 10 ** y
            print(curve.get("data-column"), repr(x), repr(y))
)";

struct Plotted {
  std::vector<std::string> panels;                                       // "title scale texts"
  std::map<std::string, std::vector<std::pair<double, double>>> points;  // By column.
};

Plotted ReadPlot(const std::string& svg_path) {
  absl::StatusOr<std::string> out = testing::RunPeerPython(kReadPlot, {svg_path});
  EXPECT_TRUE(out.ok()) << out.status();
  Plotted plotted;
  for (absl::string_view line : absl::StrSplit(out.value_or(""), '\n', absl::SkipEmpty())) {
    std::vector<std::string> words = absl::StrSplit(line, ' ');
    if (words[0] == "panel") {
      plotted.panels.push_back(words[1] + " " + words[2]);
      EXPECT_GE(std::stoi(words[3]), 8) << "too few tick labels: " << line;
      continue;
    }
    plotted.points[words[0]].emplace_back(std::stod(words[1]), std::stod(words[2]));
  }
  return plotted;
}

// Every value of `column` in the CSV is plotted at its update, within the
// rounding of pixel coordinates to 1/1000 pixel.
void ExpectCurveMatchesCsv(const MetricsTable& table, const Plotted& plotted,
                           const std::string& column) {
  const int index = table.ColumnIndex(column);
  std::vector<std::pair<double, double>> expected;
  for (const auto& row : table.rows) {
    if (row[index].has_value()) expected.emplace_back(*row[0], *row[index]);
  }
  ASSERT_TRUE(plotted.points.count(column)) << column;
  const auto& actual = plotted.points.at(column);
  ASSERT_EQ(actual.size(), expected.size()) << column;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i].first, expected[i].first, 0.01) << column << " " << i;
    EXPECT_NEAR(actual[i].second, expected[i].second, 1e-4 * std::abs(expected[i].second))
        << column << " " << i;
  }
}

TEST(PlotSvgTest, PlotsEveryCsvValueInItsPanel) {
  const std::string csv = WriteRunCsv(/*with_validation=*/true);
  const std::string svg = TempPath("run.svg");
  ASSERT_TRUE(WritePlotSvg(csv, svg).ok());
  const MetricsTable table = ReadMetricsCsv(csv).value();
  const Plotted plotted = ReadPlot(svg);
  EXPECT_EQ(plotted.panels,
            (std::vector<std::string>{"Loss linear", "Perplexity log", "Learning_rate linear",
                                      "Validation_BLEU linear"}));
  for (const char* column :
       {"loss", "nll", "ppl", "lr", "valid_loss", "valid_nll", "valid_ppl", "valid_bleu"}) {
    ExpectCurveMatchesCsv(table, plotted, column);
  }
}

TEST(PlotSvgTest, ValidationCurvesOnlyWhenPresent) {
  const std::string csv = WriteRunCsv(/*with_validation=*/false);
  const std::string svg = TempPath("train_only.svg");
  ASSERT_TRUE(WritePlotSvg(csv, svg).ok());
  const Plotted plotted = ReadPlot(svg);
  EXPECT_EQ(plotted.points.count("valid_loss"), 0);
  EXPECT_EQ(plotted.points.count("loss"), 1);
  EXPECT_EQ(plotted.panels.size(), 3);
}

TEST(PlotSvgTest, TicksAreRoundNumbers) {
  const std::string csv = WriteRunCsv(true);
  const std::string svg = TempPath("ticks.svg");
  ASSERT_TRUE(WritePlotSvg(csv, svg).ok());
  const std::string text = ReadFileToString(svg).value();
  // Updates 100..4000 in steps of 1000, perplexity in decades.
  for (const char* label : {">0</text>", ">1000</text>", ">4000</text>", ">10</text>",
                            ">1000</text>", ">0.0002</text>"}) {
    EXPECT_THAT(text, HasSubstr(label));
  }
}

TEST(PlotSvgTest, NarrowLogRangeGetsRoundTicksInsideTheDecade) {
  MetricsTable table;
  table.columns = {"update", "ppl"};
  table.rows = {{100.0, 30.0}, {200.0, 12.0}, {300.0, 4.5}};
  const std::string svg = RenderPlotSvg(table).value();
  EXPECT_THAT(svg, HasSubstr("data-y-scale=\"log\""));
  // y tick labels are right-aligned ("end"), x tick labels centred.
  for (const char* label : {"2", "5", "10", "20", "50"}) {
    EXPECT_THAT(svg, HasSubstr(std::string("\"end\">") + label + "</text>"));
  }
  EXPECT_THAT(svg, ::testing::Not(HasSubstr("\"end\">100</text>")));
  EXPECT_THAT(svg, ::testing::Not(HasSubstr("Loss")));  // No loss column, no loss panel.
}

TEST(PlotSvgTest, EmptyCsvIsAnErrorNamingIt) {
  const std::string csv = TempPath("empty.csv");
  { MetricsCsvWriter writer = MetricsCsvWriter::Open(csv, MetricColumns(), 0).value(); }
  absl::Status status = WritePlotSvg(csv, TempPath("empty.svg"));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr(csv));
  EXPECT_EQ(WritePlotSvg(csv + ".missing", TempPath("x.svg")).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tfm
