// Exports random conformance programs twice, as the engine's cases and as a foreign engine's
// scripts, runs the scripts on that engine (PyTorch) to get the expected records, and compares
// this engine with them.
//
//   bazel run -c opt //proptests/conformance:export -- --write
//       regenerates the committed corpus (proptests/conformance/corpus/) from seed 1; run it as
//       tools/regenerate_corpus.sh, which finds PyTorch and runs corpus_test after
//   bazel run -c opt //proptests/conformance:export -- --programs 500 --seed 7 --check
//       fresh programs: how many mismatch, grouped by the first statement that differs
//   bazel run -c opt //proptests/conformance:export -- --show 17 [--seed S]
//       program 17: its text, its PyTorch script, both records and the first mismatch
//   bazel run -c opt //proptests/conformance:export -- --file repro.txt
//       the same for a program written by hand (program.h's text form)
//   ... --reduce         with --show/--file: first drops every statement it can while the
//                        program still mismatches the same way (a minimal repro)
//   ... --scripts DIR    also writes every script (and torch_runtime.py) to DIR
//   ... --python PY      the interpreter that imports torch (default: $AG_PEER_PYTHON, python3)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "proptests/conformance/comparison.h"
#include "proptests/conformance/corpus.h"
#include "proptests/conformance/engine_runner.h"
#include "proptests/conformance/foreign_engine.h"
#include "proptests/conformance/forward_gen.h"
#include "proptests/conformance/program_gen.h"
#include "proptests/conformance/reduce.h"
#include "proptests/conformance/triage.h"

namespace ag::proptests {
namespace {

struct Args {
  int programs = 2000;
  uint64_t seed = 1;
  int shards = 20;
  bool write = false;
  std::string out;
  std::string scripts;
  bool check = false;
  int show = -1;
  std::string file;      // --file: show this program (text form) instead of a generated one
  bool reduce = false;   // --reduce: show the smallest program that mismatches the same way
  bool hooks = false;    // --hooks: corpus/hooks.txt only (Note [Conformance hooks])
  bool forward = false;  // --forward: corpus/forward.txt only (Note [Conformance forward mode])
  std::string engine = "pytorch";
  ForeignOptions foreign;
};

[[noreturn]] void usage(const std::string& error) {
  std::fprintf(stderr,
               "export: %s\nusage: export [--programs N] [--seed S] [--shards K] [--write | --out "
               "DIR]\n              [--scripts DIR] [--check] [--show ID | --file F] [--python PY] "
               "[--against ENGINE]\n              [--hooks | --forward]\n",
               error.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--write") {
      a.write = true;
      continue;
    }
    if (flag == "--check") {
      a.check = true;
      continue;
    }
    if (flag == "--reduce") {
      a.reduce = true;
      continue;
    }
    if (flag == "--hooks") {
      a.hooks = true;
      continue;
    }
    if (flag == "--forward") {
      a.forward = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value for " + flag);
    const std::string v = argv[++i];
    if (flag == "--programs")
      a.programs = std::stoi(v);
    else if (flag == "--seed")
      a.seed = std::stoull(v);
    else if (flag == "--shards")
      a.shards = std::stoi(v);
    else if (flag == "--out")
      a.out = v;
    else if (flag == "--scripts")
      a.scripts = v;
    else if (flag == "--show")
      a.show = std::stoi(v);
    else if (flag == "--file")
      a.file = v;
    else if (flag == "--python")
      a.foreign.python = v;
    else if (flag == "--against")
      a.engine = v;
    else
      usage("unknown flag " + flag);
  }
  if (a.write) {
    const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    if (!ws) usage("--write needs `bazel run` (it writes into the workspace)");
    a.out = std::string(ws) + "/proptests/conformance/corpus";
  }
  if (a.programs <= 0 || a.shards <= 0) usage("--programs and --shards must be positive");
  return a;
}

// Relative paths are relative to where `bazel run` was started.
std::filesystem::path user_path(const std::string& p) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  return cwd && !p.empty() && p[0] != '/' ? std::filesystem::path(cwd) / p
                                          : std::filesystem::path(p);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

// The hand-written programs, from the runfiles or the workspace.
// The hand-written programs of programs/*.txt (or of programs/`subdir`/*.txt: hooks, forward).
std::vector<CorpusEntry> handwritten_programs(const std::string& subdir = "") {
  std::vector<CorpusEntry> out;
  std::filesystem::path dir = "proptests/conformance/programs";
  if (!subdir.empty()) dir /= subdir;
  if (!std::filesystem::exists(dir)) {
    if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY"))
      dir = std::filesystem::path(ws) / dir;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.is_regular_file()) files.push_back(f.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    for (CorpusEntry& e : read_corpus_file(f.string())) out.push_back(std::move(e));
  }
  return out;
}

// Prints program `a.show`, its script and both records, marking the lines that differ. Raise
// lines carry the error messages here (from `torch_runtime.py --explain` and the engine).
int show(const Args& a, ForeignEngine& foreign) {
  ConformanceProgram p;
  std::string title = program_title(a.seed, a.show);
  if (!a.file.empty()) {
    std::ifstream in(user_path(a.file));
    if (!in) usage("cannot read " + a.file);
    p = parse_program(std::string(std::istreambuf_iterator<char>(in), {}));
    title = a.file;
  } else {
    p = a.forward ? generate_forward_program(a.seed, a.show)
                  : generate_program(a.seed, a.show, a.hooks);
  }
  if (a.reduce) p = reduce_mismatch(p, foreign);
  const std::string script = foreign.script(p, title);
  // Written first: the script to run by hand if the foreign engine fails on it. Named for this
  // process: the records printed below are read back from it, and several exports may run at once.
  const std::filesystem::path tmp = std::filesystem::temp_directory_path() /
                                    ("conformance_show-" + std::to_string(getpid()) + ".py");
  write_file(tmp, script);
  const Records expected = foreign.run(script);
  const Records actual = run_on_engine_with_timeout(p, 10).value_or(hang_records());
  Records expected_explained = expected, actual_explained = actual;
  const std::string explained = foreign.explain(tmp.string());
  if (!explained.empty()) expected_explained = Records::parse(explained);
  if (actual.lines != hang_records().lines) actual_explained = run_on_engine(p, /*explain=*/true);
  std::printf("== program (this engine's case)\n");
  for (size_t i = 0; i < p.stmts.size(); ++i)
    std::printf("s%-3zu %s\n", i, to_text(p.stmts[i]).c_str());
  std::printf("\n== %s script\n%s\n", foreign.name().c_str(), script.c_str());
  std::printf("== records (\"-\" %s only, \"+\" this engine only)\n", foreign.name().c_str());
  const Comparison c = compare(p, expected, actual);
  const size_t first = c.ok() ? SIZE_MAX : c.mismatches.front().line;
  for (size_t i = 0; i < std::max(expected.lines.size(), actual.lines.size()); ++i) {
    auto at = [&](const Records& r, size_t k) { return k < r.lines.size() ? r.lines[k] : ""; };
    if (at(expected, i) == at(actual, i) && i != first) {
      std::printf("  %s\n", at(expected_explained, i).c_str());
    } else {
      std::printf("- %s\n+ %s\n", at(expected_explained, i).c_str(),
                  at(actual_explained, i).c_str());
    }
  }
  std::printf("\n%s", explain(c).c_str());
  std::filesystem::remove(tmp);
  return c.ok() ? 0 : 1;
}

// One file of generated programs of a kind and its hand-written ones: corpus/hooks.txt (hooks,
// hook_gen.h) or corpus/forward.txt (dual levels and transforms, forward_gen.h).
struct ExtraCorpus {
  std::string name;     // hooks, forward: the file's name and programs/ subdirectory
  std::string what;     // "programs with hooks"
  std::string counted;  // "hook firings": what `count` counts in a program's records
  int (*count)(const ConformanceProgram& program, const Records& records);
  ConformanceProgram (*generate)(uint64_t seed, int id);
};

const ExtraCorpus& extra_corpus(bool hooks) {
  static const ExtraCorpus kHooks{
      "hooks", "programs with hooks", "hook firings",
      [](const ConformanceProgram&, const Records& r) {
        return static_cast<int>(std::count_if(r.lines.begin(), r.lines.end(), [](const auto& l) {
          return l.find(" fire h") != l.npos;
        }));
      },
      [](uint64_t seed, int id) { return generate_program(seed, id, true); }};
  static const ExtraCorpus kForward{"forward", "forward-mode programs",
                                    "tangents and transform results recorded", tangents_recorded,
                                    generate_forward_program};
  return hooks ? kHooks : kForward;
}

// corpus/NAME.txt: `programs` generated programs of the kind and the hand-written
// programs/NAME/*.txt, with the records the foreign engine wrote for them.
int export_extra(const Args& a, const ExtraCorpus& kind, ForeignEngine& foreign,
                 const std::string& version) {
  std::string text;
  Triage triage;
  int counted = 0;  // `kind.count` over the expected records
  auto add = [&](const std::string& id, const ConformanceProgram& p, const std::string& title) {
    const BothEngines checked = run_both_engines(p, foreign, foreign.script(p, title));
    text += format_entry(id, p, checked.expected);
    counted += kind.count(p, checked.expected);
    if (a.check) triage.add(id, p, checked.comparison);
  };
  for (int id = 0; id < a.programs; ++id) {
    add(std::to_string(id), kind.generate(a.seed, id), program_title(a.seed, id));
    if ((id + 1) % 50 == 0) std::fprintf(stderr, "\r%d programs", id + 1);
  }
  for (const CorpusEntry& e : handwritten_programs(kind.name)) {
    add(e.id, e.program, "program " + e.id);
  }
  std::fprintf(stderr, "\n%d %s, %d %s\n", a.programs, kind.what.c_str(), counted,
               kind.counted.c_str());
  if (!a.out.empty()) {
    const std::filesystem::path dir = user_path(a.out);
    std::filesystem::create_directories(dir);
    const std::string seed = std::to_string(a.seed), n = std::to_string(a.programs);
    write_file(dir / (kind.name + ".txt"),
               "# Conformance corpus of " + kind.what + ": " + n + " programs (seed " + seed +
                   ") and the hand-written programs/" + kind.name + "/*.txt, with the records " +
                   version + " wrote for them.\n# Regenerate: tools/regenerate_corpus.sh --" +
                   kind.name + "  (export --write --" + kind.name + " --seed " + seed +
                   " --programs " + n + ")\n" + text);
  }
  if (a.check) {
    std::printf("%s", triage.report().c_str());
    return triage.mismatches() == 0 ? 0 : 1;
  }
  return 0;
}

int run_export(const Args& a) {
  std::unique_ptr<ForeignEngine> foreign = make_foreign_engine(a.engine, a.foreign);
  const std::string version = foreign->version();
  if (a.show >= 0 || !a.file.empty()) return show(a, *foreign);
  if (a.hooks || a.forward) return export_extra(a, extra_corpus(a.hooks), *foreign, version);
  std::fprintf(stderr, "export: %d programs, seed %llu, expected records from %s\n", a.programs,
               static_cast<unsigned long long>(a.seed), version.c_str());
  if (!a.scripts.empty()) {
    std::filesystem::create_directories(user_path(a.scripts));
    std::filesystem::copy_file(
        foreign->runtime_path(),
        user_path(a.scripts) / std::filesystem::path(foreign->runtime_path()).filename(),
        std::filesystem::copy_options::overwrite_existing);
  }
  std::vector<std::string> shards(static_cast<size_t>(a.shards));
  Triage triage;
  int views = 0, partial = 0, writes = 0;  // program.h, ViewUse
  for (int id = 0; id < a.programs; ++id) {
    const ConformanceProgram p = generate_program(a.seed, id);
    const ViewUse use = view_use(p);
    views += use.views;
    partial += use.partial_views;
    writes += use.partial_views && use.writes_through_views;
    const std::string script = foreign->script(p, program_title(a.seed, id));
    const BothEngines checked = run_both_engines(p, *foreign, script);
    const Records& expected = checked.expected;
    if (!a.scripts.empty()) {
      char name[32];
      std::snprintf(name, sizeof(name), "program_%05d.py", id);
      write_file(user_path(a.scripts) / name, script);
    }
    shards[static_cast<size_t>(id) * a.shards / a.programs] +=
        format_entry(std::to_string(id), p, expected);
    if (a.check) triage.add(std::to_string(id), p, checked.comparison);
    if ((id + 1) % 100 == 0) std::fprintf(stderr, "\r%d programs", id + 1);
  }
  std::fprintf(stderr,
               "\n%d programs make view ops, %d partial views, %d partial views and in-place "
               "writes through views (%.0f%%)\n",
               views, partial, writes, 100.0 * writes / a.programs);
  // The hand-written programs (programs/*.txt).
  std::string handwritten;
  for (const CorpusEntry& e : handwritten_programs()) {
    const BothEngines checked =
        run_both_engines(e.program, *foreign, foreign->script(e.program, "program " + e.id));
    handwritten += format_entry(e.id, e.program, checked.expected);
    if (a.check) triage.add(e.id, e.program, checked.comparison);
  }
  if (!a.out.empty()) {
    const std::filesystem::path dir = user_path(a.out);
    std::filesystem::create_directories(dir);
    for (int k = 0; k < a.shards; ++k) {
      char name[32];
      std::snprintf(name, sizeof(name), "programs_%02d.txt", k);
      write_file(dir / name, "# Conformance corpus, part " + std::to_string(k + 1) + " of " +
                                 std::to_string(a.shards) + ": programs and the records " +
                                 version +
                                 " wrote for them.\n# Regenerate all parts: "
                                 "tools/regenerate_corpus.sh  (export --write, seed " +
                                 std::to_string(a.seed) + ", " + std::to_string(a.programs) +
                                 " programs)\n" + shards[static_cast<size_t>(k)]);
    }
    write_file(
        dir / "handwritten.txt",
        "# The hand-written programs (proptests/conformance/programs/) and the records " + version +
            " wrote for them.\n# Regenerate: tools/regenerate_corpus.sh  (export --write)\n" +
            handwritten);
    std::fprintf(stderr, "wrote %d files to %s\n", a.shards + 1, dir.c_str());
  }
  if (a.check) {
    std::printf("%s", triage.report().c_str());
    return triage.mismatches() == 0 ? 0 : 1;
  }
  return 0;
}

}  // namespace
}  // namespace ag::proptests

int main(int argc, char** argv) {
  try {
    return ag::proptests::run_export(ag::proptests::parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "export: %s\n", e.what());
    return 2;
  }
}
