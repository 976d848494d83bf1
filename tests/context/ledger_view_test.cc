#include "context/ledger_view.h"

#include <gtest/gtest.h>

#include "context/token_estimate.h"

namespace marathon::context {
namespace {

LedgerEntry attempt(int64_t seq, const std::string& cand, double score, bool correct,
                    const std::string& text) {
  LedgerEntry e;
  e.seq = seq;
  e.kind = LedgerKind::kAttempt;
  e.candidate = cand;
  e.score = score;
  e.correct = correct;
  e.text = text;
  if (!correct) e.failure = "wrong result at 3 of 5 shapes";
  return e;
}

LedgerEntry note(int64_t seq, const std::string& kind, const std::string& text) {
  LedgerEntry e;
  e.seq = seq;
  e.kind = ledger_kind_from_string(kind);
  e.text = text;
  return e;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(LedgerView, EveryDeadEndIsShownEvenAmongManyAttempts) {
  std::vector<LedgerEntry> l;
  l.push_back(note(50, "dead_end", "double buffering the B tile: slower, bank conflicts"));
  for (int i = 0; i < 500; ++i) {
    l.push_back(attempt(100 + i, "cand" + std::to_string(i), 1.0 + i * 0.001, i % 3 != 0,
                        "variation " + std::to_string(i)));
  }
  l.push_back(note(900, "dead_end", "unroll by 16: spills registers"));
  std::string v = render_ledger_view(l, LedgerViewOptions{});
  EXPECT_TRUE(contains(v, "double buffering the B tile"));
  EXPECT_TRUE(contains(v, "unroll by 16"));
}

TEST(LedgerView, BestAttemptsComeFirstByDirection) {
  std::vector<LedgerEntry> l = {attempt(1, "aaa", 3.0, true, "x"),
                                attempt(2, "bbb", 1.0, true, "y"),
                                attempt(3, "ccc", 2.0, true, "z")};
  LedgerViewOptions o;
  o.best_n = 1;
  o.recent_m = 0;
  EXPECT_TRUE(contains(render_ledger_view(l, o), "aaa correct score=3"));
  o.direction = Direction::kMin;
  std::string v = render_ledger_view(l, o);
  EXPECT_TRUE(contains(v, "bbb correct score=1"));
  EXPECT_FALSE(contains(v, "aaa"));
}

TEST(LedgerView, IncorrectAttemptsNeverCountAsBest) {
  std::vector<LedgerEntry> l = {attempt(1, "fast-but-wrong", 99.0, false, "skip work"),
                                attempt(2, "honest", 1.5, true, "tile")};
  LedgerViewOptions o;
  o.best_n = 1;
  o.recent_m = 0;
  std::string v = render_ledger_view(l, o);
  EXPECT_TRUE(contains(v, "honest"));
  EXPECT_FALSE(contains(v, "fast-but-wrong"));
}

TEST(LedgerView, DuplicatesAreMergedAndCounted) {
  std::vector<LedgerEntry> l = {
      note(1, "dead_end", "Unroll by 16"), note(2, "dead_end", "unroll   by 16"),
      attempt(3, "same", 1.0, true, "first"), attempt(4, "same", 1.0, true, "again")};
  std::string v = render_ledger_view(l, LedgerViewOptions{});
  EXPECT_EQ(v.find("nroll"), v.rfind("nroll"));
  EXPECT_TRUE(contains(v, "2 duplicates merged"));
  EXPECT_TRUE(contains(v, "again"));  // the latest evaluation of a candidate wins
}

TEST(LedgerView, HardCapHoldsAndFoldedEntriesAreCounted) {
  std::vector<LedgerEntry> l;
  for (int i = 0; i < 300; ++i) {
    l.push_back(
        note(i, "finding", "finding number " + std::to_string(i) + " " + std::string(150, 'q')));
  }
  LedgerViewOptions o;
  o.max_tokens = 600;
  std::string v = render_ledger_view(l, o);
  EXPECT_LE(estimate_text_tokens(v), o.max_tokens);
  EXPECT_TRUE(contains(v, "300 notes in all"));
  EXPECT_FALSE(contains(v, "folded out of view: 0 attempts, 0 notes"));
  EXPECT_TRUE(contains(v, "finding number 299"));  // newest notes win the space
}

TEST(LedgerView, LongEntriesAreCutToOneLine) {
  std::vector<LedgerEntry> l = {
      note(1, "strategy", "line one\nline two " + std::string(1000, 'z'))};
  std::string v = render_ledger_view(l, LedgerViewOptions{});
  EXPECT_TRUE(contains(v, "line one line two"));
  EXPECT_LT(v.size(), 600u);
}

TEST(LedgerView, EmptyLedgerSaysSo) {
  EXPECT_TRUE(contains(render_ledger_view({}, LedgerViewOptions{}), "empty"));
}

TEST(LedgerView, FiguresAndFailureAreOnTheLine) {
  LedgerEntry e = attempt(7, "abcdef0123456789", 0.5, false, "vectorise");
  e.figures = {{"speedup", 0.5}, {"dram_gbps", 812.25}};
  std::string line = render_ledger_line(e, 400);
  EXPECT_TRUE(contains(line, "[7] abcdef012345 INCORRECT"));
  EXPECT_TRUE(contains(line, "dram_gbps=812.25"));
  EXPECT_TRUE(contains(line, "failed: wrong result"));
}

TEST(LedgerView, AReEvaluatedCandidateIsRankedByItsLatestResult) {
  std::vector<LedgerEntry> l = {attempt(10, "aaaa", 5.0, true, "first try"),
                                attempt(11, "bbbb", 3.0, true, "other"),
                                attempt(12, "aaaa", 1.0, true, "same candidate, noisy rerun")};
  LedgerViewOptions o;
  o.best_n = 1;
  LedgerView view(o);
  std::string v = view.render({l[0], l[1]});
  EXPECT_TRUE(contains(v, "aaaa correct score=5")) << v;
  v = view.render(l);
  EXPECT_FALSE(contains(v, "score=5")) << v;
  EXPECT_TRUE(contains(v, "Best attempts:\n- [11] bbbb correct score=3")) << v;
  EXPECT_TRUE(contains(v, "1 duplicates merged")) << v;
}

// The loop keeps one LedgerView for a run: fed the growing ledger, it must render what a fresh
// render of the same ledger gives, with candidates evaluated again (the latest attempt wins, and a
// best attempt can lose its place), duplicate notes, and both directions.
TEST(LedgerView, KeptUpToDateItRendersWhatAFreshRenderGives) {
  for (Direction direction : {Direction::kMax, Direction::kMin}) {
    LedgerViewOptions o;
    o.direction = direction;
    o.max_tokens = 700;
    o.best_n = 3;
    o.recent_m = 4;
    LedgerView view(o);
    std::vector<LedgerEntry> l;
    for (int i = 0; i < 400; ++i) {
      const int64_t seq = 10 + 3 * i;
      if (i % 3 == 0) {
        l.push_back(note(seq, i % 9 == 0 ? "dead_end" : "finding",
                         (i % 2 ? "Tile " : "tile  ") + std::to_string(i % 23)));
      } else {
        l.push_back(attempt(seq, "c" + std::to_string((i * 7) % 31), (i * 13 % 17) / 4.0,
                            i % 5 != 0, "strategy " + std::to_string(i)));
      }
      if (i % 7 == 0) continue;  // not rendered at every entry: several new ones at once
      ASSERT_EQ(view.render(l), render_ledger_view(l, o)) << to_string(direction) << " entry " << i;
      ASSERT_EQ(view.tokens(), estimate_text_tokens(view.render(l)));
    }
  }
}

}  // namespace
}  // namespace marathon::context
