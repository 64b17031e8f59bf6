// `ferret run [--out DIR] [--steps N] [--json|--md] -- COMMAND...`: profiles an unmodified PyTorch
// script and diagnoses it. The command runs with ferret's Python shim first on PYTHONPATH
// (src/python/ferret/_run_shim): once the script imports torch, each optimizer step is a profiler
// step, and after the start-up steps the shim records the warm-up and the analysed steps into
// DIR, one gzipped trace per rank (docs/PYTHON.md). When the command ends, ferret analyses DIR -
// a job report for a job's ranks - prints it and writes DIR/report.json. The command's output and
// exit status pass through; exit 2 only when the command succeeded but nothing could be analysed.
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/analysis_options.h"
#include "app/analyze_command.h"
#include "base/safe_file.h"
#include "base/signal_forwarding.h"
#include "base/terminal_text.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"

extern char** environ;

namespace ferret::cli {

namespace {

namespace fs = std::filesystem;

struct RunCliOptions {
  std::string out;
  int steps = 5;
  int wait = 1;
  int warmup = 1;
  bool no_stack = false;
  bool json = false;
  bool markdown = false;
  int top = 10;
  std::size_t width = 0;
  std::vector<std::string> command;
};

constexpr const char* kShim = "ferret/_run_shim/sitecustomize.py";

// The folder holding the ferret Python package: FERRET_PYTHON_DIR, else beside this binary in the
// build tree (BUILD/python) or in its installed prefix (PREFIX/lib/python3/dist-packages).
std::optional<fs::path> python_package_root() {
  if (const char* env = std::getenv("FERRET_PYTHON_DIR"); env != nullptr && *env != '\0') {
    if (fs::exists(fs::path(env) / kShim)) return fs::path(env);
    return std::nullopt;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  for (const fs::path& candidate :
       {exe.parent_path() / "python", exe.parent_path().parent_path() / "lib" / "python3" / "dist-packages"}) {
    if (fs::exists(candidate / kShim, ec)) return fs::weakly_canonical(candidate, ec);
  }
  return std::nullopt;
}

std::string default_out_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return std::string("ferret-run-") + stamp;
}

bool is_trace_name(const std::string& name) {
  return name.size() > 14 && name.compare(name.size() - 14, 14, ".trace.json.gz") == 0;
}

// The command's environment: ours plus the shim's settings, PYTHONPATH led by the shim.
std::vector<std::string> child_environment(const fs::path& package_root, const fs::path& out_dir,
                                           const RunCliOptions& cli) {
  std::vector<std::string> env;
  std::string python_path = (package_root / "ferret" / "_run_shim").string() + ":" + package_root.string();
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("PYTHONPATH=", 0) == 0) {
      if (entry.size() > 11) python_path += ":" + entry.substr(11);
      continue;
    }
    if (entry.rfind("FERRET_RUN_", 0) == 0) continue;
    env.push_back(entry);
  }
  env.push_back("PYTHONPATH=" + python_path);
  env.push_back("FERRET_RUN_DIR=" + out_dir.string());
  env.push_back(fmt::format("FERRET_RUN_STEPS={}", cli.steps));
  env.push_back(fmt::format("FERRET_RUN_WAIT={}", cli.wait));
  env.push_back(fmt::format("FERRET_RUN_WARMUP={}", cli.warmup));
  env.push_back(std::string("FERRET_RUN_STACK=") + (cli.no_stack ? "0" : "1"));
  return env;
}

// Runs the command as system() would: the terminal's Ctrl-C goes to it, not to ferret, which
// still analyses what was recorded; SIGINT, SIGTERM and SIGHUP sent to ferret are passed on to it
// (base/signal_forwarding.h), and the shim turns TERM and HUP into a clean exit that writes the
// trace. Returns its exit status (128 + N when signal N ended it).
int run_command(const std::vector<std::string>& command, const std::vector<std::string>& env) {
  std::vector<char*> argv, envp;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int sig : kForwardedSignals) sigaddset(&defaults, sig);
  sigaddset(&defaults, SIGQUIT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  SignalForwarding forwarding;
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  int status = 0;
  if (spawned == 0) {
    forwarding.forward_to(pid);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    forwarding.forward_to(0);
  }
  if (spawned != 0) {
    print_error(fmt::format("cannot run {}: {}", command.front(), std::strerror(spawned)));
    throw ExitCode{127};
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The folder for the traces. The default one is new (mkdir, so two runs in the same second each
// get their own: ferret-run-<time>, -2, -3, ...); a folder given with --out may exist, but only as
// the user's own that nobody else can write to: another user could plant links or traces there.
struct OutFolder {
  fs::path path;
  bool created = false;
};

OutFolder make_out_folder(const std::string& requested) {
  std::error_code ec;
  if (requested.empty()) {
    const std::string base = default_out_dir();
    for (int n = 1; n <= 1000; ++n) {
      const fs::path candidate = fs::absolute(n == 1 ? base : fmt::format("{}-{}", base, n), ec);
      if (::mkdir(candidate.c_str(), 0755) == 0) return {candidate, true};
      if (errno != EEXIST) {
        print_error(fmt::format("cannot create the folder {}: {}", candidate.string(), std::strerror(errno)));
        throw ExitCode{2};
      }
    }
    print_error(fmt::format("cannot create a folder {}-N: 1000 of them exist; give --out", base));
    throw ExitCode{2};
  }
  OutFolder out{fs::absolute(requested, ec), false};
  if (!fs::exists(fs::symlink_status(out.path, ec))) {
    fs::create_directories(out.path.parent_path(), ec);
    if (::mkdir(out.path.c_str(), 0755) == 0) return {out.path, true};
    if (errno != EEXIST) {
      print_error(fmt::format("--out {}: cannot create the folder ({})", out.path.string(), std::strerror(errno)));
      throw ExitCode{2};
    }
  }
  struct stat st {};
  if (::lstat(out.path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    print_error(fmt::format("--out {}: not a folder (a link to one is not taken either)", out.path.string()));
    throw ExitCode{2};
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    print_error(fmt::format(
        "--out {}: {}; others could plant files or links where ferret writes: choose a folder of "
        "your own that only you can write to",
        out.path.string(), st.st_uid != ::geteuid() ? "the folder is not yours" : "others can write to the folder"));
    throw ExitCode{2};
  }
  return out;
}

struct RunMeta {
  std::optional<std::int64_t> first_step, last_step;
  std::vector<DataLoaderSettings> dataloaders;
  HostFacts host;
};

// What the shim wrote beside the traces (.ferret-run.jsonl): the first step to analyse (after
// the warm-up) and the DataLoaders. The lowest rank's file speaks for the job.
RunMeta read_run_meta(const std::vector<fs::path>& meta_files) {
  RunMeta meta;
  for (const fs::path& file : meta_files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      print_error(fmt::format("{}: not the JSON ferret run writes; left out", file.string()));
      continue;
    }
    // Steps beyond the warm-up: analyse from the first of them to the last one that ended at a
    // boundary (a step the script's exit cut short is left out). None: every recorded step.
    auto integer = [&](const char* key) {
      const auto it = j.find(key);
      return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : std::int64_t{-1};
    };
    const std::int64_t first = integer("first_step");
    const std::int64_t last = integer("last_step");
    if (!meta.first_step && first >= 0 && last >= first) {
      meta.first_step = first;
      meta.last_step = last;
    }
    if (!meta.host.recorded() && j.contains("host")) meta.host = parse_host_facts(j["host"].dump());
    if (meta.dataloaders.empty() && j.contains("dataloaders")) {
      try {
        meta.dataloaders = parse_dataloader_settings(j["dataloaders"].dump(), file.string());
      } catch (const InputError& e) {
        print_error(e.what());
      }
    }
  }
  return meta;
}

void run_run(const RunCliOptions& cli) {
  if (cli.json && cli.markdown) usage_error("choose one of --json and --md");
  if (cli.command.empty()) usage_error("give the command to run after --, e.g. ferret run -- python train.py");
  const std::optional<fs::path> package_root = python_package_root();
  if (!package_root) {
    print_error(
        "cannot find ferret's Python package (ferret/_run_shim) beside this binary; set FERRET_PYTHON_DIR to the "
        "folder that holds it (BUILD/python in a build tree, PREFIX/lib/python3/dist-packages when installed)");
    throw ExitCode{2};
  }
  std::error_code ec;
  const OutFolder folder = make_out_folder(cli.out);
  const fs::path& out_dir = folder.path;
  for (const fs::directory_entry& e : fs::directory_iterator(out_dir, ec)) {
    if (is_trace_name(e.path().filename().string())) {
      print_error(fmt::format("--out {}: already holds traces ({}); choose an empty folder", out_dir.string(),
                              e.path().filename().string()));
      throw ExitCode{2};
    }
  }

  const int command_status = run_command(cli.command, child_environment(*package_root, out_dir, cli));

  std::vector<fs::path> traces, metas;
  for (const fs::directory_entry& e : fs::directory_iterator(out_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (is_trace_name(name)) traces.push_back(e.path());
    if (name.size() > 17 && name.compare(name.size() - 17, 17, ".ferret-run.jsonl") == 0) metas.push_back(e.path());
  }
  std::sort(traces.begin(), traces.end());
  std::sort(metas.begin(), metas.end());
  const int failed = command_status != 0 ? command_status : 2;
  if (traces.empty()) {
    if (folder.created) {  // nothing recorded: leave no empty folder behind
      for (const fs::path& m : metas) fs::remove(m, ec);
      fs::remove(out_dir, ec);
    }
    print_error(fmt::format(
        "the command recorded no profiler step (exit status {}): ferret run profiles a script's optimizer steps, "
        "from step {} on; for a loop without an optimizer use ferret.profile() and p.step() (docs/PYTHON.md)",
        command_status, cli.wait + 1));
    throw ExitCode{failed};
  }

  const RunMeta meta = read_run_meta(metas);
  AnalyzeRequest request;
  for (const fs::path& t : traces) request.inputs.push_back(t.string());
  request.analysis.top_k = cli.top;
  request.analysis.first_step = meta.first_step;
  request.analysis.last_step = meta.last_step;
  request.analysis.dataloaders = meta.dataloaders;
  request.analysis.host = meta.host;
  request.grouping = traces.size() > 1 ? AnalyzeGrouping::kJob : AnalyzeGrouping::kPerTrace;
  request.every_format = true;
  request.style = stdout_style(cli.width);
  request.on_message = [](const std::string& m) { print_error(m); };
  const AnalyzeOutput output = run_analyze(request);
  if (!output.json.empty()) {
    try {
      write_file_safely((out_dir / "report.json").string(), output.json, request.inputs);
    } catch (const std::runtime_error& e) {
      print_error(e.what());
    }
  }
  std::cerr << fmt::format("ferret: {} trace{} in {}\n", traces.size(), traces.size() == 1 ? "" : "s",
                           terminal_safe(out_dir.string()));
  if (cli.json)
    std::cout << output.json;
  else if (cli.markdown)
    print_report(output.markdown);
  else
    print_report(output.text);
  std::cout.flush();
  if (command_status != 0) throw ExitCode{command_status};
  if (output.exit_code != 0) throw ExitCode{output.exit_code};
}

}  // namespace

void register_run(CLI::App& app) {
  auto opt = std::make_shared<RunCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Profile an unmodified PyTorch script and diagnose it: ferret run [OPTIONS] -- python train.py ...");
  cmd->add_option("--out", opt->out, "Folder for the traces and report.json (default ./ferret-run-<time>)");
  cmd->add_option("--steps", opt->steps, "Optimizer steps analysed (default 5)")->check(CLI::Range(1, 100000));
  cmd->add_option("--wait", opt->wait, "Optimizer steps run before recording starts (start-up; default 1)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--warmup", opt->warmup, "Steps recorded first and left out of the analysis (default 1)")
      ->check(CLI::Range(0, 100000));
  cmd->add_flag("--no-stack", opt->no_stack, "Record without Python stacks (with_stack=False: less overhead)");
  cmd->add_flag("--json", opt->json, "Print the JSON document (as ferret analyze --json) instead of the report");
  cmd->add_flag("--md", opt->markdown, "Print Markdown to paste into a pull request");
  cmd->add_option("--top", opt->top, "Rows in top-N tables (default 10)")->check(CLI::Range(1, 100000));
  add_width_option(*cmd, opt->width);
  cmd->add_option("command", opt->command, "The command to profile, after --")->expected(-1)->required();
  cmd->callback([opt] { run_run(*opt); });
}

}  // namespace ferret::cli
