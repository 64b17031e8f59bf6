// Every command that writes a file, against the attacks of a hostile or careless command line:
// the output named as one of the inputs (directly or through a link: refused, exit 2, the input
// byte for byte unchanged), a link planted where the output goes (replaced, the file it pointed
// at untouched), a folder that does not exist (exit 2 naming the file). None leaves a temporary
// file behind. `ferret run`'s folder is checked in tests/python/test_run.py; `bench --profile`
// writes through the same base/safe_file.h.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

namespace ferret {
namespace {
namespace output_files_cli_test {

namespace fs = std::filesystem;

struct Writer {
  std::string name;
  std::vector<std::string> inputs;  // files it reads (copied into the folder)
  std::string command;              // {in0}, {in1}, {out} replaced
};

std::string expand(std::string s, const std::vector<std::string>& ins, const std::string& out) {
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const std::string key = "{in" + std::to_string(i) + "}";
    for (std::size_t at; (at = s.find(key)) != std::string::npos;) s.replace(at, key.size(), "'" + ins[i] + "'");
  }
  for (std::size_t at; (at = s.find("{out}")) != std::string::npos;) s.replace(at, 5, "'" + out + "'");
  return s;
}

std::vector<Writer> writers() {
  const std::string trace = std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-input-bound.json.gz";
  return {
      {"annotate", {trace}, "annotate {in0} -o {out}"},
      {"analyze --html", {trace}, "analyze --html {out} {in0}"},
      {"diff --html", {trace, trace}, "diff --html {out} {in0} {in1}"},
      {"gen inflate", {trace}, "gen inflate --from {in0} --copies 2 -o {out}"},
      {"gen scenario", {trace}, "gen scenario input-bound --steps 2 -o {out} --no-gzip"},
      {"watch --out", {trace}, "watch --json --out {out} -- true"},
      {"watch --samples-out", {trace}, "watch --samples-out {out} -- true"},
  };
}

TEST(OutputFilesCli, EveryWriterRefusesItsInputAndReplacesPlantedLinks) {
  const std::vector<Writer> all = writers();
  for (std::size_t k = 0; k < all.size(); ++k) {
    const Writer& w = all[k];
    const fs::path dir = test::temp_path("outputs-" + std::to_string(k));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<std::string> ins;
    for (std::size_t i = 0; i < w.inputs.size(); ++i) {
      ins.push_back((dir / ("in" + std::to_string(i) + ".json.gz")).string());
      fs::copy_file(w.inputs[i], ins.back());
    }
    const std::string original = test::read_file(ins[0]);
    fs::create_symlink(ins[0], dir / "link-to-input.json.gz");
    const bool reads_inputs = w.command.find("{in0}") != std::string::npos;  // gen scenario reads none
    for (const std::string& out : {ins[0], ins.back(), (dir / "link-to-input.json.gz").string()}) {
      if (!reads_inputs) break;
      const test::CommandResult r = test::run_ferret(expand(w.command, ins, out));
      EXPECT_EQ(r.exit_code, 2) << w.name << " over " << out << ": " << r.err;
      EXPECT_NE(r.err.find("is the input"), std::string::npos) << w.name << ": " << r.err;
      for (const std::string& in : ins) EXPECT_EQ(test::read_file(in), original) << w.name << " changed " << in;
    }
    // A link planted where the output goes, pointing at someone's file.
    test::write_file((dir / "victim").string(), "precious");
    fs::create_symlink(dir / "victim", dir / "out.json.gz");
    const test::CommandResult ok = test::run_ferret(expand(w.command, ins, (dir / "out.json.gz").string()));
    EXPECT_EQ(ok.exit_code, 0) << w.name << ": " << ok.err;
    EXPECT_EQ(test::read_file((dir / "victim").string()), "precious") << w.name;
    EXPECT_FALSE(fs::is_symlink(dir / "out.json.gz")) << w.name;
    EXPECT_GT(fs::file_size(dir / "out.json.gz"), 20u) << w.name;
    // A folder that does not exist.
    const test::CommandResult none = test::run_ferret(expand(w.command, ins, (dir / "no/such/out.json").string()));
    EXPECT_EQ(none.exit_code, 2) << w.name;
    EXPECT_NE(none.err.find("no/such/out.json"), std::string::npos) << w.name << ": " << none.err;
    // No temporary file left behind by any of it.
    for (const fs::directory_entry& e : fs::directory_iterator(dir))
      EXPECT_EQ(e.path().filename().string().find(".ferret-"), std::string::npos) << w.name << ": " << e.path();
    fs::remove_all(dir);
  }
}

}  // namespace output_files_cli_test
}  // namespace
}  // namespace ferret
