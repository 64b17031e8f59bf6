// The rule registry is the one list of rule ids: every id the sources emit is in it, every row
// is emitted somewhere, docs/RULES.md lists exactly its rows (dimension, role, a symptom's
// causes), and the findings of real runs on the example traces and NCCL logs are all registered.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/nccl/nccl_setup.h"
#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "diagnosis/nccl/rules_nccl.h"
#include "diagnosis/rule_registry.h"
#include "ingest/nccl/nccl_log_parser.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rule_registry_test {

namespace fs = std::filesystem;

std::string source_path(const std::string& relative) { return std::string(FERRET_SOURCE_DIR) + "/" + relative; }

std::set<std::string> registered_ids() {
  std::set<std::string> ids;
  for (const RuleInfo& r : rule_registry()) ids.insert(std::string(r.id));
  return ids;
}

// docs/RULES.md: every table row whose first cell is a backquoted id. Columns by their header.
struct DocRow {
  std::map<std::string, std::string> cells;  // header -> cell
  int line = 0;
};

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t start = 1;  // after the leading '|'
  for (std::size_t bar = line.find('|', start); bar != std::string::npos; bar = line.find('|', start)) {
    std::string cell = line.substr(start, bar - start);
    const std::size_t first = cell.find_first_not_of(' ');
    const std::size_t last = cell.find_last_not_of(' ');
    cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
    start = bar + 1;
  }
  return cells;
}

std::vector<std::string> rules_md_lines() {
  const std::string text = test::read_file(source_path("docs/RULES.md"));
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// id -> row, for the rule tables (header "id") and the symptom table (header "symptom").
std::map<std::string, DocRow> doc_rows(const std::string& first_header) {
  std::map<std::string, DocRow> rows;
  std::vector<std::string> header;
  int number = 0;
  for (const std::string& line : rules_md_lines()) {
    ++number;
    if (line.rfind('|', 0) != 0) {
      header.clear();
      continue;
    }
    const std::vector<std::string> cells = split_cells(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    if (header.front() != first_header || cells.empty() || cells.front().size() < 3 || cells.front().front() != '`')
      continue;
    const std::string id = cells.front().substr(1, cells.front().size() - 2);
    EXPECT_EQ(rows.count(id), 0u) << id << " listed twice, again on line " << number;
    DocRow& row = rows[id];
    row.line = number;
    for (std::size_t i = 0; i < cells.size() && i < header.size(); ++i) row.cells[header[i]] = cells[i];
  }
  return rows;
}

std::set<std::string> backquoted(const std::string& cell) {
  std::set<std::string> ids;
  const std::regex quoted("`([a-z0-9-]+)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), quoted); it != std::sregex_iterator(); ++it)
    ids.insert((*it)[1].str());
  return ids;
}

// docs/RULES.md's what-if table: the findings whose change is a `--remove` removal.
std::set<std::string> documented_removals() {
  std::set<std::string> ids;
  bool in_table = false;
  for (const std::string& line : rules_md_lines()) {
    if (line.rfind('|', 0) != 0) {
      in_table = false;
      continue;
    }
    const std::vector<std::string> cells = split_cells(line);
    if (cells.size() >= 2 && cells[0] == "finding" && cells[1] == "the change re-timed") in_table = true;
    if (!in_table || cells.size() < 2 || cells[1].find("(`--remove ") == std::string::npos) continue;
    for (const std::string& id : backquoted(cells[0])) ids.insert(id);
  }
  EXPECT_GT(ids.size(), 5u) << "docs/RULES.md: the what-if table was not found";
  return ids;
}

TEST(RuleRegistry, IdsAreUniqueAndSymptomsNameCausesOfTheirOwnPath) {
  EXPECT_EQ(registered_ids().size(), rule_registry().size());
  for (const RuleInfo& r : rule_registry()) {
    EXPECT_EQ(r.role == RuleRole::kSymptom, !causes_of(r.id).empty()) << r.id;
    EXPECT_EQ(r.role == RuleRole::kSymptom, !r.record_next.empty()) << r.id;
    for (std::string_view symptom_id : r.explains) {
      const RuleInfo* symptom = find_rule(symptom_id);
      ASSERT_NE(symptom, nullptr) << r.id << " explains unregistered " << symptom_id;
      EXPECT_EQ(symptom->role, RuleRole::kSymptom) << r.id << " -> " << symptom_id;
      EXPECT_EQ(symptom->source, r.source) << r.id << " -> " << symptom_id;
      EXPECT_NE(r.role, RuleRole::kWindow) << r.id;
      // A symptom may fold into another symptom (told more precisely), never back: no cycles.
      EXPECT_FALSE(explains(*symptom, r.id)) << r.id << " <-> " << symptom_id;
      const std::span<const std::string_view> causes = causes_of(symptom_id);
      EXPECT_EQ(std::count(causes.begin(), causes.end(), r.id), 1) << r.id << " -> " << symptom_id;
    }
    if (r.same_cause_as.empty()) continue;
    const RuleInfo* precise = find_rule(r.same_cause_as);
    ASSERT_NE(precise, nullptr) << r.id << " folds into unregistered " << r.same_cause_as;
    EXPECT_EQ(r.role, RuleRole::kCause) << r.id;
    EXPECT_EQ(precise->role, RuleRole::kCause) << r.id << " -> " << r.same_cause_as;
    EXPECT_EQ(precise->source, r.source) << r.id << " -> " << r.same_cause_as;
    EXPECT_TRUE(precise->same_cause_as.empty()) << r.same_cause_as << " folds on: one step only";
  }
  EXPECT_EQ(find_rule("no-such-rule"), nullptr);
}

// Every `id = "..."` in src/ is a rule id: each is registered, and each row is emitted somewhere.
// The what-if removal a row carries is the change fix_change_of gives a finding of that id, and
// only rows on one trace carry one (the what-if re-times one trace's steps); the removals named by
// `ferret whatif --remove` are each some rule's.
TEST(RuleRegistry, RowsCarryTheirWhatIfRemoval) {
  int with_removal = 0;
  for (const RuleInfo& r : rule_registry()) {
    Finding f;
    f.id = std::string(r.id);
    const RetimeChanges changes = fix_change_of(f);
    EXPECT_EQ(whatif_changes_anything(changes), r.removal != nullptr) << r.id;
    if (r.removal == nullptr) continue;
    ++with_removal;
    EXPECT_TRUE(changes.*r.removal) << r.id;
    EXPECT_EQ(r.source, RuleSource::kTrace) << r.id;
  }
  // docs/RULES.md's what-if table names a `--remove` change exactly for the rows that carry one.
  EXPECT_EQ(with_removal, static_cast<int>(documented_removals().size()));
  for (const std::string& id : documented_removals()) {
    const RuleInfo* rule = find_rule(id);
    ASSERT_NE(rule, nullptr) << id;
    EXPECT_NE(rule->removal, nullptr) << id << " documents a --remove change its row does not carry";
  }
  const RuleInfo* stall = find_rule("device-stall");
  ASSERT_NE(stall, nullptr);
  EXPECT_TRUE(stall->device_stalled);
  EXPECT_FALSE(stall->waits_on_host);
  for (const char* id : {"input-bound", "launch-bound", "cpu-bound", "low-gpu-utilization"})
    EXPECT_TRUE(find_rule(id)->waits_on_host) << id;
}

// The families are the rule files' own: each file's FERRET_RULE_FAMILY rows are the ids it writes
// rows for (read from the source text), every family runs, and the families of one input run in
// an order the rows decide, never the build's (no two share one). docs/RULES.md's `file` column
// names the file that holds each one-trace rule's row.
TEST(RuleRegistry, FamiliesAreTheRuleFilesOwn) {
  const std::regex row(R"re(RuleInfo\{\s*"([a-z0-9-]+)")re");
  std::map<std::string, std::string> file_of;  // id -> the rule file whose text holds its row
  int files_with_rows = 0;
  for (const auto& entry : fs::recursive_directory_iterator(source_path("src"))) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.rfind("rules_", 0) != 0 || entry.path().extension() != ".cpp") continue;
    const std::string text = test::read_file(entry.path().string());
    bool any = false;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator(); ++it) {
      EXPECT_TRUE(file_of.emplace((*it)[1].str(), name).second) << (*it)[1].str() << " has rows in two files";
      any = true;
    }
    files_with_rows += any;
    EXPECT_EQ(any, text.find("\nFERRET_RULE_FAMILY(") != std::string::npos) << name << ": rows without a family";
  }
  std::set<std::string> family_ids;
  for (const RuleFamily* family : rule_families()) {
    EXPECT_NE(family->run.call, nullptr) << family->name;
    for (const RuleInfo& r : family->rules) family_ids.insert(std::string(r.id));
  }
  EXPECT_EQ(family_ids, registered_ids());
  std::set<std::string> in_files;
  for (const auto& [id, file] : file_of) in_files.insert(id);
  EXPECT_EQ(in_files, registered_ids());
  EXPECT_GE(rule_families().size(), static_cast<std::size_t>(files_with_rows));
  for (const auto& [id, doc] : doc_rows("id")) {
    const RuleInfo* rule = find_rule(id);
    if (rule == nullptr || rule->source != RuleSource::kTrace) continue;
    const std::string& files = doc.cells.at("file");  // the row's file first, then others that emit it
    EXPECT_EQ(files.substr(0, files.find(", ")), file_of[id]) << id << " on line " << doc.line;
  }
}

// Rules that judge one cause from different angles share the key their rows give, and
// finding_for puts it on the finding: the verdict then keeps one finding for the cause.
TEST(RuleRegistry, CauseKeysComeFromTheRows) {
  // The pairs docs/RULES.md names as one cause judged twice share a key.
  EXPECT_EQ(finding_for("sync-copy").cause, finding_for("host-sync").cause);
  EXPECT_EQ(finding_for("pageable-copies").cause, finding_for("pageable-copy").cause);
  EXPECT_EQ(finding_for("nccl-busbw-low").cause, finding_for("low-busbw").cause);
  EXPECT_EQ(finding_for("nccl-socket-transport").cause, "nccl-network");
  EXPECT_EQ(finding_for("device-bound").cause, "");  // its own id
  EXPECT_EQ(finding_for("host-sync").dimension, find_rule("host-sync")->dimension);
  EXPECT_THROW(finding_for("no-such-rule"), std::logic_error);
  // A key names a cause, not a rule: no key is a registered id, so no row spells another's id.
  for (const RuleInfo& r : rule_registry()) {
    if (!r.cause_key.empty()) {
      EXPECT_EQ(find_rule(r.cause_key), nullptr) << r.id << " keys by an id";
    }
  }
}

TEST(RuleRegistry, EveryIdInTheSourcesIsRegisteredAndNoRowIsStale) {
  // Rules build their findings with finding_for("id") (both ids of a `cond ? "a" : "b"`).
  const std::regex constructed(R"re(finding_for\(([^;]*?)\);)re");
  const std::regex literal(R"re("([a-z0-9-]+)")re");
  std::set<std::string> in_sources;
  for (const auto& entry : fs::recursive_directory_iterator(source_path("src"))) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cpp") continue;
    const std::string text = test::read_file(entry.path().string());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), constructed); it != std::sregex_iterator(); ++it) {
      const std::string call = (*it)[1].str();
      for (auto id = std::sregex_iterator(call.begin(), call.end(), literal); id != std::sregex_iterator(); ++id)
        in_sources.insert((*id)[1].str());
    }
  }
  EXPECT_GT(in_sources.size(), 60u);  // the pattern still finds the rules' constructors
  EXPECT_EQ(in_sources, registered_ids());
}

// The rules run on real inputs: whatever fires is registered with the dimension it reports.
void expect_registered(const std::vector<Finding>& findings, const std::string& input) {
  for (const Finding& f : findings) {
    const RuleInfo* rule = find_rule(f.id);
    ASSERT_NE(rule, nullptr) << f.id << " from " << input;
    EXPECT_EQ(rule->dimension, f.dimension) << f.id << " from " << input;
  }
}

TEST(RuleRegistry, FindingsOnTheExampleTracesAndNcclLogsAreRegistered) {
  std::size_t findings = 0;
  for (const auto& entry : fs::directory_iterator(source_path("examples/traces"))) {
    const TraceModel model = load_trace(entry.path().string());
    const Diagnosis d = diagnose(analyze_trace(model, {}));
    expect_registered(d.findings, entry.path().string());
    findings += d.findings.size();
  }
  for (const auto& entry : fs::directory_iterator(source_path("tests/data/nccl"))) {
    NcclLog log;
    parse_nccl_file(entry.path().string(), log);
    std::vector<Finding> found;
    rules_nccl(analyze_nccl_setup(log), found);
    expect_registered(found, entry.path().string());
    findings += found.size();
  }
  EXPECT_GT(findings, 10u);  // the inputs do trigger rules
}

TEST(RuleRegistry, RulesMdListsEveryRegisteredRuleAndNoOther) {
  const std::map<std::string, DocRow> rows = doc_rows("id");
  std::set<std::string> documented;
  for (const auto& [id, row] : rows) documented.insert(id);
  EXPECT_EQ(documented, registered_ids());
  for (const auto& [id, row] : rows) {
    const RuleInfo* rule = find_rule(id);
    if (rule == nullptr) continue;  // reported above
    const std::string dimension = row.cells.at("dimension / layer");
    EXPECT_EQ(dimension.substr(0, dimension.find(" / ")), dimension_name(rule->dimension))
        << id << " on line " << row.line;
    EXPECT_EQ(row.cells.at("role"), rule_role_name(rule->role)) << id << " on line " << row.line;
  }
}

TEST(RuleRegistry, RulesMdNamesEachSymptomsCauses) {
  const std::map<std::string, DocRow> rows = doc_rows("symptom");
  std::set<std::string> symptoms;
  for (const RuleInfo& r : rule_registry()) {
    if (r.role != RuleRole::kSymptom) continue;
    symptoms.insert(std::string(r.id));
    const auto row = rows.find(std::string(r.id));
    ASSERT_NE(row, rows.end()) << r.id << " has no row in the symptom table";
    std::set<std::string> causes;
    for (std::string_view c : causes_of(r.id)) causes.insert(std::string(c));
    EXPECT_EQ(backquoted(row->second.cells.at("explained by")), causes) << r.id;
  }
  std::set<std::string> documented;
  for (const auto& [id, row] : rows) documented.insert(id);
  EXPECT_EQ(documented, symptoms);
}

TEST(RuleRegistry, RulesMdNamesEachSameCausePair) {
  const std::map<std::string, DocRow> rows = doc_rows("rule");
  std::set<std::string> folding;
  for (const RuleInfo& r : rule_registry()) {
    if (r.same_cause_as.empty()) continue;
    folding.insert(std::string(r.id));
    const auto row = rows.find(std::string(r.id));
    ASSERT_NE(row, rows.end()) << r.id << " has no row in the same-cause table";
    EXPECT_EQ(backquoted(row->second.cells.at("same cause as")), std::set<std::string>{std::string(r.same_cause_as)})
        << r.id;
  }
  std::set<std::string> documented;
  for (const auto& [id, row] : rows) documented.insert(id);
  EXPECT_EQ(documented, folding);
}

}  // namespace rule_registry_test
}  // namespace
}  // namespace ferret
