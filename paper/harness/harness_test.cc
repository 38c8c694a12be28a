// The measuring harness of paper/reproduce: number formatting and the table writer, the published
// figures' lookup, the measuring conditions, the TorchScript IR writer, and the peer protocol
// (against a stand-in peer, so no PyTorch is needed), and the pinning of single-threaded rounds.
#include <gtest/gtest.h>
#include <sched.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "engine/jit/synthetic_graph.h"
#include "paper/harness/affinity.h"
#include "paper/harness/environment.h"
#include "paper/harness/interleave.h"
#include "paper/harness/load.h"
#include "paper/harness/markdown.h"
#include "paper/harness/peers.h"
#include "paper/harness/published.h"
#include "paper/harness/results.h"
#include "paper/workloads/torchscript_ir.h"

namespace ag::paper {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Markdown, FormatsNumbersAlike) {
  EXPECT_EQ(format(18.734), "18.7");
  EXPECT_EQ(format(1166.4), "1166");
  EXPECT_EQ(format(0.0159), "0.0159");
  EXPECT_EQ(format(3), "3");
  EXPECT_EQ(format(std::nan("")), "n/a");
  EXPECT_EQ(with_unit(2.5, "ms"), "2.5 ms");
  EXPECT_EQ(ratio(16.5, 18.75), "0.88x");
  EXPECT_EQ(ratio(1, 0), "n/a");
  EXPECT_EQ(ratio_range(0.512, 0.7654), "0.512x - 0.765x");
  EXPECT_EQ(ratio_range(std::nan(""), 1), "n/a");
  EXPECT_EQ(peer_cell(20.0, 16.0, "ms", "missing"), "20 ms (0.8x)");
  EXPECT_EQ(peer_cell(std::nullopt, 16.0, "ms", "not installed"), "not installed");
}

TEST(Markdown, TableAlignsTheFirstColumnLeftAndTheOthersRight) {
  Table t({"workload", "ours", "peer"});
  t.row({"tiny", "1 us", "10 us"});
  EXPECT_EQ(t.str(),
            "| workload | ours | peer |\n| --- | ---: | ---: |\n| tiny | 1 us | 10 us |\n");
}

TEST(Results, ARunOfSomeWorkloadsKeepsTheOtherWorkloadsRows) {
  const std::filesystem::path path =
      std::filesystem::path(std::getenv("TEST_TMPDIR")) / "figures.tsv";
  Results first("cpu");
  first.add("tiny_graph", "ours", "time", 1, "us");
  first.add("hessian_relu", "ours", "time", 2, "ms");
  first.write_tsv(path);
  Results second("cpu");
  second.add("tiny_graph", "ours", "time", 3, "us");
  second.write_tsv(path, /*keep_other_workloads=*/true);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "workload\tvariant\tmetric\tvalue\tunit\tdevice\n"
            "hessian_relu\tours\ttime\t2\tms\tcpu\n"
            "tiny_graph\tours\ttime\t3\tus\tcpu\n");
  second.write_tsv(path);  // a whole run replaces the file
  std::ifstream again(path);
  std::stringstream replaced;
  replaced << again.rdbuf();
  EXPECT_EQ(replaced.str(),
            "workload\tvariant\tmetric\tvalue\tunit\tdevice\ntiny_graph\tours\ttime\t3\tus\tcpu\n");
}

TEST(Published, NamesSourceAndHardware) {
  const Published& p = published("seed001/relu/functorch");
  EXPECT_STREQ(p.text, "29.547 ms");
  EXPECT_DOUBLE_EQ(p.value, 29.547);
  EXPECT_STREQ(p.source, "PR 82544");
  EXPECT_NE(std::string(p.hardware).find("A100"), std::string::npos);
  try {
    published("seed001/no such figure");
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("seed001/no such figure"), std::string::npos);
  }
}

TEST(Conditions, QuietFirstThenTheNamedLoads) {
  EXPECT_EQ(measuring_conditions("", 2).size(), 1u);
  const std::vector<Condition> all = measuring_conditions("all", 2);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_TRUE(all[0].quiet());
  EXPECT_EQ(all[1].name, "busy: bursty");
  EXPECT_EQ(all[1].load, (std::vector<std::string>{"bursty", "2", "20", "20"}));
  EXPECT_EQ(all[2].load, (std::vector<std::string>{"compile", "2"}));
  EXPECT_EQ(all[3].load, (std::vector<std::string>{"spin", "1"}));
  const std::vector<Condition> spin = measuring_conditions("spin", 2);
  ASSERT_EQ(spin.size(), 2u);
  EXPECT_EQ(spin[1].name, "busy: spin");
  EXPECT_THROW(measuring_conditions("bursty,nosuchload", 2), std::invalid_argument);
}

TEST(Conditions, LoadStartsAndStopsTheGeneratorAndNotesTheLoadAverage) {
  const std::vector<Condition> spin = measuring_conditions("spin", 2);
  { const Load load(spin[1]); }
  EXPECT_NE(load_averages_seen().find("busy: spin"), std::string::npos);
}

TEST(Interleave, RoundsAlternateAndMissingContendersDropOut) {
  std::string order;
  int b_calls = 0;
  const std::vector<std::optional<double>> med =
      interleaved(3, {{"a",
                       [&] {
                         order += 'a';
                         return std::optional<double>(order.size());
                       }},
                      {"b",
                       [&]() -> std::optional<double> {
                         order += 'b';
                         return ++b_calls <= 2 ? std::optional<double>(1) : std::nullopt;
                       }},
                      {"c",
                       [&] {
                         order += 'c';
                         return std::optional<double>(5);
                       },
                       2}});
  // Warm-up abc, then round 1 abc, round 2 abc (b fails there), round 3 a only (c has 2 rounds).
  EXPECT_EQ(order, "abcabcabca");
  EXPECT_DOUBLE_EQ(*med[0], 7);  // samples 4, 7, 10
  EXPECT_DOUBLE_EQ(*med[1], 1);
  EXPECT_DOUBLE_EQ(*med[2], 5);
}

TEST(Interleave, KeepsEveryRoundForRatiosPairedByRound) {
  int a_calls = 0, b_calls = 0;
  const Rounds rounds = interleaved_rounds(
      4, {{"a", [&] { return std::optional<double>(2.0 * a_calls++); }},
          {"b", [&]() -> std::optional<double> {
             // Warm-up, then 1, 2, 4; gone from the fourth round on.
             const int call = b_calls++;
             return call < 4 ? std::optional<double>(call == 0 ? 1 : 1 << (call - 1))
                             : std::nullopt;
           }}});
  ASSERT_EQ(rounds.samples.size(), 2u);
  ASSERT_EQ(rounds.samples[0].size(), 4u);
  EXPECT_DOUBLE_EQ(*rounds.samples[0][3], 8);  // a's warm-up was 0, its rounds 2, 4, 6, 8
  EXPECT_FALSE(rounds.samples[1][3].has_value());
  EXPECT_EQ(rounds.paired_ratios(0, 1), (std::vector<double>{2, 2, 1.5}));  // 2/1, 4/2, 6/4
  EXPECT_EQ(rounds.middle_half(0, 1), (std::pair<double, double>{1.75, 2}));
  EXPECT_DOUBLE_EQ(*rounds.medians()[0], 5);
  EXPECT_DOUBLE_EQ(*rounds.medians()[1], 2);
}

TEST(Interleave, QuantilesInterpolateBetweenRanks) {
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(quantile({3, 1, 2}, 0.5), median({3, 1, 2}));
  EXPECT_DOUBLE_EQ(quantile({7}, 0.25), 7);
  EXPECT_DOUBLE_EQ(quantile({1, 9}, 1.0), 9);
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0);
}

TEST(TorchScriptIr, WritesEveryNodeWithItsAttributesAsHoistedConstants) {
  const std::unique_ptr<jit::Graph> g = jit::makeLayeredGraph(60);
  const std::string ir = to_torchscript_ir(*g);
  EXPECT_EQ(ir.rfind("graph(%vx : Tensor, %vw : Tensor):\n", 0), 0u) << ir;
  size_t transposes = 0, adds = 0, prints = 0;
  for (const jit::Node* n : g->nodes()) {
    transposes += n->kind() == "aten::transpose";
    adds += n->kind() == "aten::add" || n->kind() == "aten::add_";
    prints += n->kind() == "prim::Print";
  }
  EXPECT_EQ(count(ir, "aten::transpose(%v"), transposes);
  EXPECT_EQ(count(ir, "aten::add"), adds);
  EXPECT_EQ(count(ir, "prim::Print(%v"), prints);
  // One constant per distinct value: dims 0 and 1 (also add's alpha), 3 for the shape.
  EXPECT_EQ(count(ir, "prim::Constant"), 3u);
  EXPECT_EQ(count(ir, " : int[] = prim::ListConstruct("), 1u);
  EXPECT_NE(ir.find("aten::transpose(%vx, %i0, %i1)"), std::string::npos) << ir;
  EXPECT_NE(ir.find("return (%v"), std::string::npos);
}

TEST(TorchScriptIr, RefusesAKindWithoutASignature) {
  jit::Graph g;
  jit::Value* x = g.addInput(jit::Type::Tensor, "x");
  g.registerOutput(g.append("aten::exp", {x})->output());
  EXPECT_THROW(to_torchscript_ir(g), jit::IrError);
}

std::string fake_peer() { return locate("paper/harness/fake_peer.sh").string(); }

TEST(PeerProcess, SpeaksTheProtocolAndGetsTheThreadCount) {
  PeerProcess peer("Fake", {fake_peer()}, 3);
  ASSERT_TRUE(peer.available()) << peer.reason();
  EXPECT_EQ(peer.description(), "Fake 1.0 (test peer), OMP_NUM_THREADS=3");
  EXPECT_EQ(peer.short_name(), "Fake 1.0");
  const auto values = peer.run({"echo", "1.5", "2e-3"});
  ASSERT_TRUE(values.has_value());
  EXPECT_EQ(*values, (std::vector<double>{1.5, 2e-3}));
  EXPECT_EQ(peer.value({"echo", "7"}), 7.0);
  // An error answer is one missing figure; the peer goes on.
  EXPECT_FALSE(peer.value({"fail"}).has_value());
  EXPECT_TRUE(peer.available());
  EXPECT_EQ(peer.value({"echo", "8"}), 8.0);
}

TEST(PeerProcess, APeerThatStopsAnsweringIsStopped) {
  PeerProcess peer("Fake", {fake_peer()}, 1);
  ASSERT_TRUE(peer.available());
  EXPECT_FALSE(peer.value({"hang"}, /*timeout_s=*/0.5).has_value());
  EXPECT_FALSE(peer.available());
  EXPECT_NE(peer.reason().find("stopped answering"), std::string::npos) << peer.reason();
  EXPECT_FALSE(peer.value({"echo", "1"}).has_value());
}

TEST(PeerProcess, SaysWhyItIsUnavailable) {
  PeerProcess refuses("Fake", {fake_peer(), "unavailable"}, 1);
  EXPECT_FALSE(refuses.available());
  EXPECT_NE(refuses.reason().find("no such library here"), std::string::npos) << refuses.reason();
  PeerProcess missing("Fake", {"/nonexistent/peer"}, 1);
  EXPECT_FALSE(missing.available());
  EXPECT_NE(missing.reason().find("cannot execute /nonexistent/peer"), std::string::npos)
      << missing.reason();
  EXPECT_FALSE(missing.value({"echo", "1"}).has_value());
}

// The CPUs thread or process `tid` may run on.
cpu_set_t cpus_of(pid_t tid) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  EXPECT_EQ(sched_getaffinity(tid, sizeof(cpus), &cpus), 0);
  return cpus;
}

TEST(PinnedToOneCpu, PinsThisThreadAndThePeersToOneCpuAndRestoresThem) {
  PeerProcess peer("Fake", {fake_peer()}, 1);
  ASSERT_TRUE(peer.available()) << peer.reason();
  const cpu_set_t mine = cpus_of(0), peers = cpus_of(peer.pid());
  {
    const PinnedToOneCpu pinned({peer.pid()});
    ASSERT_TRUE(pinned.pinned()) << pinned.error();
    for (pid_t tid : {pid_t{0}, peer.pid()}) {
      const cpu_set_t now = cpus_of(tid);
      EXPECT_EQ(CPU_COUNT(&now), 1) << tid;
      EXPECT_TRUE(CPU_ISSET(pinned.cpu(), &now)) << tid;
    }
    EXPECT_EQ(peer.value({"echo", "4"}), 4.0);  // it still answers
  }
  const cpu_set_t mine_after = cpus_of(0), peers_after = cpus_of(peer.pid());
  EXPECT_TRUE(CPU_EQUAL(&mine_after, &mine));
  EXPECT_TRUE(CPU_EQUAL(&peers_after, &peers));
}

TEST(Peers, MissingCellsSayWhy) {
  Peers skipped;
  skipped.skipped = "skipped (--no-peers)";
  EXPECT_EQ(skipped.missing(nullptr), "skipped");
  EXPECT_EQ(skipped.describe(), "Peers: skipped (--no-peers).\n");
  Peers none;
  none.torch = std::make_unique<PeerProcess>("PyTorch", "torch not importable");
  EXPECT_EQ(none.missing(none.torch.get()), "not installed");
  EXPECT_NE(none.describe().find("PyTorch: not measured: torch not importable"), std::string::npos)
      << none.describe();
}

}  // namespace
}  // namespace ag::paper
