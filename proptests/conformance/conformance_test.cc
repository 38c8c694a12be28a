// The conformance machinery itself: the text form, the engine runner's records, the comparison
// (that it fails on what it must catch and on nothing else), and the reducer.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "proptests/conformance/comparison.h"
#include "proptests/conformance/engine_runner.h"
#include "proptests/conformance/program_gen.h"
#include "proptests/conformance/reduce.h"

namespace ag::proptests {
namespace {

const char* const kProgram =
    "v0 = leaf [2] seed=1 requires_grad=1\n"
    "v1 = mul v0 v0\n"
    "v2 = sum v1\n"
    "v3 = grad outputs=v2 inputs=v0 grad_outputs=- retain_graph=- create_graph=0 "
    "allow_unused=0\n";

TEST(ProgramText, RoundTripsGeneratedPrograms) {
  for (int id = 0; id < 300; ++id) {
    const std::string text = to_text(generate_program(3, id));
    EXPECT_EQ(to_text(parse_program(text)), text) << "program " << id;
  }
  int hooks = 0;  // Note [Conformance hooks]
  for (int id = 0; id < 300; ++id) {
    const ConformanceProgram p = generate_program(3, id, /*hooks=*/true);
    const std::string text = to_text(p);
    EXPECT_EQ(to_text(parse_program(text)), text) << "program " << id << " with hooks";
    hooks += std::any_of(p.stmts.begin(), p.stmts.end(),
                         [](const Stmt& s) { return s.kind == StmtKind::kHook; });
  }
  EXPECT_GT(hooks, 200);
}

// The generator writes detach_ (a view's refused), and as_strided of views that may read an
// element twice (an expand's, an unfold's), whose gradients divide by the counts.
TEST(ProgramGen, WritesDetachInplaceAndAsStridedOfOverlappingViews) {
  int detach_inplace = 0, of_view = 0, of_overlapping = 0;
  for (int id = 0; id < 1000; ++id) {
    const ConformanceProgram p = generate_program(3, id);
    std::set<int> views, overlapping;
    for (const Stmt& s : p.stmts) {
      detach_inplace += s.kind == StmtKind::kDetachInplace;
      if (s.kind != StmtKind::kViewOp) continue;
      const bool input_overlaps = overlapping.count(s.args[0]) > 0;
      if (s.view_op == ViewOp::kAsStrided) {
        of_view += views.count(s.args[0]) > 0;
        of_overlapping += input_overlaps;
      }
      const bool overlaps =
          input_overlaps || s.view_op == ViewOp::kExpand || s.view_op == ViewOp::kUnfold;
      for (int r : s.results) {
        views.insert(r);
        if (overlaps) overlapping.insert(r);
      }
    }
  }
  EXPECT_GT(detach_inplace, 100);
  EXPECT_GT(of_view, 20);
  EXPECT_GT(of_overlapping, 5);
}

// The programs make exactly the ops that the traits table says they make (Note [Op traits]): the
// compositions' (op steps and ops on arbitrary operands) and the statements' (views, detach,
// in-place ops).
TEST(ProgramGen, GeneratesExactlyTheCoveredOps) {
  auto ops_of = [](const Stmt& s) -> std::vector<ops::OpId> {
    switch (s.kind) {
      case StmtKind::kOp:
        return {proptests::op_id(s.instr.op)};
      case StmtKind::kView:
        return {ops::OpId::kView};
      case StmtKind::kViewOp:
        return {view_op_id(s.view_op)};
      case StmtKind::kDetach:
        return {ops::OpId::kDetach};
      case StmtKind::kInplace: {
        const ops::OpId in_place[] = {ops::OpId::kAddInplace, ops::OpId::kMulInplace,
                                      ops::OpId::kCopyInplace};
        return {in_place[static_cast<int>(s.inplace)]};
      }
      default:
        return {};
    }
  };
  std::set<ops::OpId> made;
  for (int id = 0; id < 3000; ++id) {
    for (const Stmt& s : generate_program(5, id).stmts) {
      for (ops::OpId op : ops_of(s)) made.insert(op);
    }
  }
  for (ops::OpId op : ops::kAllOps) {
    EXPECT_EQ(made.count(op) == 1, proptests::made_by(op, proptests::kConformance))
        << ops::op_name(op) << ": " << proptests::traits(op).how;
  }
}

// The text form names ops by the list's names, and only ops the programs make.
TEST(ProgramText, OpsAreNamedByTheList) {
  EXPECT_EQ(to_text(parse_program("v0 = leaf [2] seed=1 requires_grad=1\n"
                                  "v1 = add_scalar v0 s=0.5\n")),
            "v0 = leaf [2] seed=1 requires_grad=1\nv1 = add_scalar v0 s=0.5\n");
  EXPECT_THROW(
      parse_program("v0 = leaf [2] seed=1 requires_grad=1\nv1 = threshold_backward v0 v0\n"),
      std::runtime_error);
}

TEST(ProgramText, MalformedLinesNameTheLine) {
  try {
    parse_program("v0 = leaf [2] seed=1 requires_grad=1\nv1 = frobnicate v0\n");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST(EngineRunner, RecordsResultsGradientsAndTheEnd) {
  const Records r = run_on_engine(parse_program(kProgram));
  ASSERT_EQ(r.lines.size(), 16u) << r.text();
  EXPECT_EQ(r.lines[0], "s0 ok");
  EXPECT_EQ(r.lines[1], "s0 v0 [2] rg=1 leaf=1");  // leaves: no values
  EXPECT_EQ(r.lines[3].substr(0, 26), "s1 v1 [2] rg=1 leaf=0 = 0.");
  EXPECT_EQ(r.lines[7].substr(0, 21), "s3 v3 [2] rg=0 leaf=1");
  // v0 = [-0.932.., 0.828..]: digest -0.932 + 0.828 * 1.618 (records.h) = 0.4077..
  EXPECT_EQ(r.lines[8].substr(0, 24), "end v0 rg=1 leaf=1 d=0.4");
  EXPECT_EQ(r.lines[9], "end v0 grad none");
}

TEST(EngineRunner, RaisesAndSkips) {
  const Records r = run_on_engine(
      parse_program("v0 = leaf [2] seed=1 requires_grad=0\n"
                    "v1 = grad outputs=v0 inputs=v0 grad_outputs=- retain_graph=- create_graph=0 "
                    "allow_unused=0\n"
                    "v2 = neg v1\n"));
  EXPECT_EQ(r.lines[2], "s1 raise");
  EXPECT_EQ(r.lines[3], "s2 skip");
}

// detach_ raises on a view (PyTorch's "Can't detach views in-place") and makes anything else a
// leaf that does not require grad, recorded as an in-place op's target; a view made before keeps
// its history.
TEST(EngineRunner, DetachInplaceRecordsItsTarget) {
  const Records r =
      run_on_engine(parse_program("v0 = leaf [2] seed=1 requires_grad=1\n"
                                  "v1 = mul v0 v0\n"
                                  "v2 = view v1 [2]\n"
                                  "detach_ v2\n"
                                  "detach_ v1 ; flags v2\n"));
  ASSERT_GE(r.lines.size(), 10u) << r.text();
  EXPECT_EQ(r.lines[6], "s3 raise");
  EXPECT_EQ(r.lines[7], "s4 ok");
  EXPECT_EQ(r.lines[8].substr(0, 27), "s4 v1 [2] rg=0 leaf=1 = 0.8");
  EXPECT_EQ(r.lines[9], "s4 flags v2 [2] rg=1 leaf=0");
}

// The records of kProgram with line `index` replaced.
Records edited(size_t index, const std::string& line) {
  Records r = run_on_engine(parse_program(kProgram));
  r.lines.at(index) = line;
  return r;
}

TEST(Comparison, AgreesWithItself) {
  const ConformanceProgram p = parse_program(kProgram);
  const Comparison c = compare(p, run_on_engine(p), run_on_engine(p));
  EXPECT_TRUE(c.ok()) << explain(c);
  EXPECT_EQ(c.numbers.bitwise, c.numbers.numbers);
  EXPECT_GT(c.numbers.numbers, 5);
}

TEST(Comparison, CatchesEachKindOfDifference) {
  const ConformanceProgram p = parse_program(kProgram);
  const Records actual = run_on_engine(p);
  const std::string v1 = actual.lines[3];  // "s1 v1 [2] rg=1 leaf=0 = x y"
  const std::string x = v1.substr(v1.find(" = ") + 3, v1.rfind(' ') - v1.find(" = ") - 3);
  const double xv = std::stod(x);
  char off[64];
  std::snprintf(off, sizeof(off), "%.17g", xv * (1 + 1e-9));  // 1000x the tolerance
  const std::vector<std::pair<size_t, std::string>> edits = {
      {3, std::string(v1).replace(v1.find(x), x.size(), off)},   // a value
      {3, std::string(v1).replace(v1.find("rg=1"), 4, "rg=0")},  // a flag
      {3, std::string(v1).replace(v1.find("[2]"), 3, "[1,2]")},  // a shape
      {2, "s1 raise"},                                           // raise or not
      {9, "end v0 grad d=1 a=1"},                                // a .grad
      {7, actual.lines[7] + " 0"},                               // one value more
  };
  for (const auto& [index, line] : edits) {
    EXPECT_FALSE(compare(p, edited(index, line), actual).ok()) << line;
  }
  Records shorter = actual;
  shorter.lines.pop_back();
  EXPECT_FALSE(compare(p, shorter, actual).ok());
}

// A digest sums n weighted values (weights below 2), so values that each agree may move it by up
// to 2 n atol: nine values of about -1e-16 (a cancellation of O(1) terms, rounded differently by
// the two engines) give digests 1.2e-15 apart. More than that, or another count, disagrees.
TEST(Comparison, ADigestToleratesWhatItsValuesMayEachMove) {
  NumberStats stats;
  auto line = [](double d, int n) {
    char text[128];
    std::snprintf(text, sizeof(text), "end v7 rg=0 leaf=1 d=%.17g a=%.17g n=%d", d, -d, n);
    return std::string(text);
  };
  EXPECT_TRUE(lines_agree(line(-1.7886465262667168e-15, 9), line(-2.941918618714338e-15, 9),
                          Tolerance{}, stats));
  EXPECT_FALSE(
      lines_agree(line(-1.7886465262667168e-15, 9), line(-2.1e-12, 9), Tolerance{}, stats));
  // 2.6e-15 apart: within what nine values may move, not one.
  EXPECT_TRUE(lines_agree(line(-1e-14, 9), line(-3.6e-14, 9), Tolerance{}, stats));
  EXPECT_FALSE(lines_agree(line(-1e-14, 1), line(-3.6e-14, 1), Tolerance{}, stats));
  EXPECT_FALSE(lines_agree(line(-1e-15, 9), line(-1e-15, 8), Tolerance{}, stats));
}

TEST(Comparison, ToleratesRoundingOnly) {
  const ConformanceProgram p = parse_program(kProgram);
  const Records actual = run_on_engine(p);
  const std::string v1 = actual.lines[3];
  const std::string x = v1.substr(v1.find(" = ") + 3, v1.rfind(' ') - v1.find(" = ") - 3);
  char near[64];
  std::snprintf(near, sizeof(near), "%.17g", std::stod(x) * (1 + 4e-16));  // a few ulps
  const Comparison c =
      compare(p, edited(3, std::string(v1).replace(v1.find(x), x.size(), near)), actual);
  EXPECT_TRUE(c.ok()) << explain(c);
  EXPECT_EQ(c.numbers.bitwise + 1, c.numbers.numbers);
}

// A rule excuses its own difference and no other: pytorch-internal-error excuses a statement on
// which PyTorch failed an internal assert, not one on which it raised an error.
TEST(Comparison, RulesAreNarrow) {
  const ConformanceProgram p =
      parse_program("v0 = leaf [2] seed=1 requires_grad=1\nv1 = sum_dim v0 dim=0 keepdim=1\n");
  const Records actual = run_on_engine(p);
  ASSERT_EQ(actual.lines[2], "s1 ok") << actual.text();
  for (const std::string pytorch : {"s1 reference-failed", "s1 raise"}) {
    Records expected = actual;
    expected.lines[2] = pytorch;
    const Comparison c = compare(p, expected, actual);
    EXPECT_EQ(c.ok(), pytorch == "s1 reference-failed") << explain(c);
    if (c.ok()) {
      EXPECT_EQ(c.stopped_by, "pytorch-internal-error");
    }
  }
}

// unused-input-zeros excuses the engine's zeros for a requested output of a multi-output node
// that got no gradient (PyTorch raises "appears to not have been used"): chunk's outputs are
// siblings as a custom Function's are (found by a live fuzz run).
TEST(Comparison, ChunkPiecesAreSiblings) {
  const ConformanceProgram recorded = parse_program(
      "v0 = leaf [2] seed=1 requires_grad=1\n"
      "v1 v2 = chunk v0 chunks=2 dim=0\n"
      "v3 = leaf [1] seed=2 requires_grad=1\n"
      "v4 = grad outputs=v2 inputs=v1 grad_outputs=v3 retain_graph=1 create_graph=0 "
      "allow_unused=0\n");
  const Records actual = run_on_engine(recorded);
  Records expected;
  for (const std::string& line : actual.lines) {
    if (line.rfind("s3 v", 0) == 0) continue;  // PyTorch raised: no result lines
    expected.lines.push_back(line == "s3 ok" ? "s3 raise" : line);
  }
  ASSERT_NE(expected.lines.size(), actual.lines.size()) << actual.text();
  const Comparison c = compare(recorded, expected, actual);
  EXPECT_TRUE(c.ok()) << explain(c);
  EXPECT_EQ(c.stopped_by, "unused-input-zeros");
}

TEST(Reduce, DropsWhatThePredicateDoesNotNeed) {
  const ConformanceProgram p = parse_program(
      "v0 = leaf [2] seed=1 requires_grad=1\n"
      "v1 = tanh v0\n"
      "v2 = leaf [2] seed=2 requires_grad=1\n"
      "v3 = exp v2\n"
      "v4 = neg v3\n");
  // Keep programs that still take exp of something.
  const ConformanceProgram r = reduce(p, [](const ConformanceProgram& q) {
    for (const Stmt& s : q.stmts) {
      if (s.kind == StmtKind::kOp && s.instr.op == proptests::Op::kExp) return true;
    }
    return false;
  });
  EXPECT_EQ(to_text(r), "v0 = leaf [2] seed=2 requires_grad=1\nv1 = exp v0\n");
}

}  // namespace
}  // namespace ag::proptests
