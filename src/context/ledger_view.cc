#include "context/ledger_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "context/goal_block.h"
#include "context/token_estimate.h"

namespace marathon::context {
namespace {

std::string one_line(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool space = false;
  for (char c : s) {
    bool ws = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (ws) {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      space = false;
      out += c;
    }
  }
  return out;
}

std::string cut(std::string s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t n = max_chars > 3 ? max_chars - 3 : 0;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // keep UTF-8 whole
  s.resize(n);
  return s + "...";
}

std::string lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

std::string figure_text(const json& v) {
  if (v.is_number()) return fmt_number(v.get<double>());
  if (v.is_string()) return cut(one_line(v.get<std::string>()), 40);
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return cut(v.dump(), 40);
}

bool better(const LedgerEntry& a, const LedgerEntry& b, const std::string& direction) {
  double sa = *a.score, sb = *b.score;
  if (sa != sb) return direction == "min" ? sa < sb : sa > sb;
  return a.seq < b.seq;
}

bool is_attempt(const LedgerEntry& e) { return e.kind == "attempt"; }
bool is_good_attempt(const LedgerEntry& e) {
  return is_attempt(e) && e.correct.value_or(false) && e.score.has_value() && e.failure.empty();
}

}  // namespace

std::string render_ledger_line(const LedgerEntry& e, size_t max_chars) {
  std::string line = fmt::format("[{}] ", e.seq);
  if (is_attempt(e)) {
    line += e.candidate.empty() ? "attempt" : short_hash(e.candidate);
    if (e.correct) line += *e.correct ? " correct" : " INCORRECT";
    if (e.score) line += " score=" + fmt_number(*e.score);
    if (e.figures.is_object()) {
      int shown = 0;
      for (const auto& [k, v] : e.figures.items()) {
        if (shown++ == 5) break;
        line += " " + k + "=" + figure_text(v);
      }
    }
    if (!e.failure.empty()) line += " failed: " + one_line(e.failure);
    if (!e.text.empty()) line += " | " + one_line(e.text);
  } else {
    line += e.kind + ": " + one_line(e.text);
  }
  return cut(std::move(line), max_chars);
}

std::string render_ledger_view(const std::vector<LedgerEntry>& ledger, const LedgerViewOptions& o) {
  // Deduplicate: attempts by candidate (latest wins), notes by kind + normalised text (first wins).
  std::vector<const LedgerEntry*> attempts, dead_ends, notes;
  int64_t duplicates = 0;
  {
    std::set<std::string> seen_notes;
    std::vector<const LedgerEntry*> all_attempts;
    for (const LedgerEntry& e : ledger) {
      if (is_attempt(e)) {
        all_attempts.push_back(&e);
      } else {
        std::string key = e.kind + "\n" + lower(one_line(e.text));
        if (!seen_notes.insert(key).second) {
          ++duplicates;
          continue;
        }
        (e.kind == "dead_end" ? dead_ends : notes).push_back(&e);
      }
    }
    std::set<std::string> seen_candidates;
    for (auto it = all_attempts.rbegin(); it != all_attempts.rend(); ++it) {
      const LedgerEntry* e = *it;
      if (!e->candidate.empty() && !seen_candidates.insert(e->candidate).second) {
        ++duplicates;
        continue;
      }
      attempts.push_back(e);
    }
    std::reverse(attempts.begin(), attempts.end());
  }

  std::vector<const LedgerEntry*> best;
  for (const LedgerEntry* e : attempts) {
    if (is_good_attempt(*e)) best.push_back(e);
  }
  std::sort(best.begin(), best.end(), [&](const LedgerEntry* a, const LedgerEntry* b) {
    return better(*a, *b, o.direction);
  });
  if (best.size() > static_cast<size_t>(o.best_n)) best.resize(o.best_n);
  std::set<const LedgerEntry*> in_best(best.begin(), best.end());
  std::vector<const LedgerEntry*> recent;
  for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
    if (recent.size() >= static_cast<size_t>(o.recent_m)) break;
    if (!in_best.count(*it)) recent.push_back(*it);
  }
  std::reverse(recent.begin(), recent.end());
  std::vector<const LedgerEntry*> recent_notes(notes.rbegin(), notes.rend());  // newest first

  // Fill under the cap in priority order: dead ends, best, recent attempts, notes.
  int64_t budget = o.max_tokens - estimate_text_tokens(kLedgerHeading) - 40;  // 40: the tally line
  auto take = [&](const std::vector<const LedgerEntry*>& from, std::vector<std::string>& lines) {
    size_t taken = 0;
    for (const LedgerEntry* e : from) {
      std::string line = "- " + render_ledger_line(*e, o.max_line_chars);
      int64_t cost = estimate_text_tokens(line) + 1;
      if (cost > budget) break;
      budget -= cost;
      lines.push_back(std::move(line));
      ++taken;
    }
    return taken;
  };
  std::vector<std::string> dead_lines, best_lines, recent_lines, note_lines;
  size_t shown_dead = take(dead_ends, dead_lines);
  size_t shown_best = take(best, best_lines);
  size_t shown_recent = take(recent, recent_lines);
  size_t shown_notes = take(recent_notes, note_lines);
  std::reverse(note_lines.begin(), note_lines.end());  // chronological in the view

  const int64_t folded_attempts =
      static_cast<int64_t>(attempts.size()) - static_cast<int64_t>(shown_best + shown_recent);
  const int64_t folded_notes = static_cast<int64_t>(dead_ends.size() + notes.size()) -
                               static_cast<int64_t>(shown_dead + shown_notes);

  std::string out = kLedgerHeading;
  if (ledger.empty()) return out + "\n(empty: no evaluations or notes yet)";
  auto section = [&](const char* title, const std::vector<std::string>& lines) {
    if (lines.empty()) return;
    out += "\n";
    out += title;
    for (const std::string& l : lines) out += "\n" + l;
  };
  section("Dead ends (do not retry):", dead_lines);
  section("Best attempts:", best_lines);
  section("Recent attempts:", recent_lines);
  section("Notes:", note_lines);
  out += fmt::format(
      "\n({} attempts, {} notes in all; folded out of view: {} attempts, {} notes; {} duplicates "
      "merged)",
      attempts.size(), dead_ends.size() + notes.size(), folded_attempts, folded_notes, duplicates);
  return out;
}

}  // namespace marathon::context
