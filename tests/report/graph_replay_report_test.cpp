// Graph replays in `ferret analyze` output (text, JSON, Markdown), on the trace of graph_traces.h:
// replays 66 us of 67 us busy = 98.51%, 2 graph launches, 6 kernels; aten::mm captured 40 us.
#include <string>

#include <gtest/gtest.h>

#include "graph_traces.h"
#include "ingest/trace_loader.h"
#include "report/trace/analyze_report.h"

namespace ferret {
namespace {
namespace graph_replay_report_test {

using test::graph_trace;
using test::GraphTraceOptions;

struct Rendered {
  std::string text, markdown;
  nlohmann::ordered_json json;
};

Rendered render(const GraphTraceOptions& o) {
  const TraceModel m = load_trace_text(graph_trace(o));
  const TraceAnalysis a = analyze_trace(m, {});
  const Diagnosis d = diagnose(a);
  return {analyze_text(a, d, Style{}), analyze_markdown(a, d), analyze_json(a, d)};
}

TEST(GraphReplayReport, JsonCarriesTheReplayedShareAndAttribution) {
  const Rendered r = render({});
  const auto& t = r.json["temporal"];
  EXPECT_EQ(t["graph_launches"], 2);
  EXPECT_EQ(t["graph_replayed_activities"], 6);
  EXPECT_EQ(t["graph_replayed_kernels"], 6);
  EXPECT_DOUBLE_EQ(t["graph_replayed_us"].get<double>(), 66.0);
  EXPECT_DOUBLE_EQ(t["graph_replayed_pct"].get<double>(), 98.51);  // 66 / 67, two decimals
  EXPECT_EQ(t["launches"], 1);                                     // the eager launch only
  const auto& op = r.json["hot_spots"]["ops_by_device"][0];
  EXPECT_EQ(op["name"], "aten::mm");
  EXPECT_DOUBLE_EQ(op["device_self_us"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(op["device_replayed_us"].get<double>(), 40.0);
  EXPECT_EQ(op["graph_replay"], false);
  EXPECT_DOUBLE_EQ(r.json["hot_spots"]["replayed_device_us"].get<double>(), 66.0);
  EXPECT_DOUBLE_EQ(r.json["hot_spots"]["replayed_unattributed_us"].get<double>(), 0.0);
}

TEST(GraphReplayReport, TextAndMarkdownSayWhereReplaysWent) {
  const Rendered mapped = render({});
  EXPECT_NE(mapped.text.find("98.5% of GPU busy time replayed by CUDA graphs (2 graph launches, 6 kernels)"),
            std::string::npos)
      << mapped.text;
  EXPECT_NE(mapped.text.find("graph replays (66.000 us) are counted for the ops that captured them"), std::string::npos)
      << mapped.text;
  EXPECT_NE(mapped.markdown.find("98.5% of GPU busy time replayed by CUDA graphs"), std::string::npos)
      << mapped.markdown;
  const Rendered unmapped = render({.hip = true, .replay_ids = false});
  EXPECT_NE(unmapped.text.find("HIP graph replay (graph id not recorded)"), std::string::npos) << unmapped.text;
  EXPECT_NE(unmapped.text.find("replayed by HIP graphs"), std::string::npos) << unmapped.text;
  EXPECT_NE(unmapped.text.find("are shown as graph-replay rows"), std::string::npos) << unmapped.text;
  EXPECT_EQ(unmapped.json["hot_spots"]["ops_by_device"][0]["graph_replay"], true);
  EXPECT_DOUBLE_EQ(unmapped.json["temporal"]["graph_replayed_pct"].get<double>(), 98.51);
  // No hot-operator finding for the replay row: it is not one operator.
  for (const auto& f : unmapped.json["findings"]) EXPECT_NE(f["id"], "hot-operator") << f["title"];
}

TEST(GraphReplayReport, NothingAboutGraphsWithoutReplays) {
  const TraceModel m = load_trace_text(
      R"({"traceEvents":[{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":2,)"
      R"("args":{"correlation":1}},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":2,)"
      R"("args":{"correlation":1}}]})");
  const TraceAnalysis a = analyze_trace(m, {});
  const Diagnosis d = diagnose(a);
  EXPECT_EQ(analyze_text(a, d, Style{}).find("graph"), std::string::npos);
  EXPECT_EQ(analyze_json(a, d)["temporal"]["graph_replayed_pct"], 0.0);
}

}  // namespace graph_replay_report_test
}  // namespace
}  // namespace ferret
