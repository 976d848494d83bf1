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

bool is_attempt(const LedgerEntry& e) { return e.kind == LedgerKind::kAttempt; }
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
    line += to_string(e.kind) + ": " + one_line(e.text);
  }
  return cut(std::move(line), max_chars);
}

std::string render_ledger_view(const std::vector<LedgerEntry>& ledger, const LedgerViewOptions& o) {
  return LedgerView(o).render(ledger);
}

LedgerView::LedgerView(LedgerViewOptions o) : o_(std::move(o)) {}

void LedgerView::reset() { *this = LedgerView(std::move(o_)); }

// Deduplication as the view defines it: attempts by candidate (the latest wins), notes by kind and
// normalised text (the first wins).
void LedgerView::add(const std::vector<LedgerEntry>& ledger, size_t i) {
  const LedgerEntry& e = ledger[i];
  lines_.emplace_back();
  costs_.push_back(0);
  if (!is_attempt(e)) {
    if (!seen_notes_.insert(to_string(e.kind) + "\n" + lower(one_line(e.text))).second) {
      ++duplicates_;
      return;
    }
    (e.kind == LedgerKind::kDeadEnd ? dead_ends_ : notes_).push_back(i);
    return;
  }
  if (!e.candidate.empty()) {
    auto [it, fresh] = candidates_.try_emplace(e.candidate, i);
    if (!fresh) {
      const size_t old = it->second;
      attempts_.erase(old);
      if (is_good_attempt(ledger[old])) {
        best_.erase({better_first_key(o_.direction, *ledger[old].score), ledger[old].seq});
      }
      it->second = i;
      ++duplicates_;
    }
  }
  attempts_.insert(i);
  if (is_good_attempt(e)) best_[{better_first_key(o_.direction, *e.score), e.seq}] = i;
}

const std::string& LedgerView::line(const std::vector<LedgerEntry>& ledger, size_t i) {
  if (lines_[i].empty()) {
    lines_[i] = "- " + render_ledger_line(ledger[i], o_.max_line_chars);
    costs_[i] = estimate_text_tokens(lines_[i]) + 1;
  }
  return lines_[i];
}

const std::string& LedgerView::render(const std::vector<LedgerEntry>& ledger) {
  const bool extends = fed_ <= ledger.size() && (fed_ == 0 || ledger[fed_ - 1].seq == last_seq_);
  if (!extends) reset();
  if (fed_ == ledger.size() && !text_.empty()) return text_;
  for (size_t i = fed_; i < ledger.size(); ++i) add(ledger, i);
  fed_ = ledger.size();
  last_seq_ = ledger.empty() ? 0 : ledger.back().seq;

  std::vector<size_t> best;
  for (const auto& [key, i] : best_) {
    if (best.size() >= static_cast<size_t>(std::max(o_.best_n, 0))) break;
    best.push_back(i);
  }
  std::vector<size_t> recent;
  for (auto it = attempts_.rbegin(); it != attempts_.rend(); ++it) {
    if (recent.size() >= static_cast<size_t>(o_.recent_m)) break;
    if (std::find(best.begin(), best.end(), *it) == best.end()) recent.push_back(*it);
  }
  std::reverse(recent.begin(), recent.end());

  // Fill under the cap in priority order: dead ends, best, recent attempts, notes (newest first).
  int64_t budget = o_.max_tokens - estimate_text_tokens(kLedgerHeading) - 40;  // 40: the tally
  auto take = [&](auto first, auto last, std::vector<const std::string*>& out) {
    size_t taken = 0;
    for (; first != last; ++first) {
      const std::string& l = line(ledger, *first);
      const int64_t cost = costs_[*first];
      if (cost > budget) break;
      budget -= cost;
      out.push_back(&l);
      ++taken;
    }
    return taken;
  };
  std::vector<const std::string*> dead_lines, best_lines, recent_lines, note_lines;
  size_t shown_dead = take(dead_ends_.begin(), dead_ends_.end(), dead_lines);
  size_t shown_best = take(best.begin(), best.end(), best_lines);
  size_t shown_recent = take(recent.begin(), recent.end(), recent_lines);
  size_t shown_notes = take(notes_.rbegin(), notes_.rend(), note_lines);
  std::reverse(note_lines.begin(), note_lines.end());  // chronological in the view

  const int64_t n_attempts = static_cast<int64_t>(attempts_.size());
  const int64_t n_notes = static_cast<int64_t>(dead_ends_.size() + notes_.size());
  const int64_t folded_attempts = n_attempts - static_cast<int64_t>(shown_best + shown_recent);
  const int64_t folded_notes = n_notes - static_cast<int64_t>(shown_dead + shown_notes);

  text_ = kLedgerHeading;
  if (ledger.empty()) {
    text_ += "\n(empty: no evaluations or notes yet)";
  } else {
    auto section = [&](const char* title, const std::vector<const std::string*>& lines) {
      if (lines.empty()) return;
      text_ += "\n";
      text_ += title;
      for (const std::string* l : lines) {
        text_ += "\n";
        text_ += *l;
      }
    };
    section("Dead ends (do not retry):", dead_lines);
    section("Best attempts:", best_lines);
    section("Recent attempts:", recent_lines);
    section("Notes:", note_lines);
    text_ += fmt::format(
        "\n({} attempts, {} notes in all; folded out of view: {} attempts, {} notes; {} "
        "duplicates merged)",
        n_attempts, n_notes, folded_attempts, folded_notes, duplicates_);
  }
  tokens_ = estimate_text_tokens(text_);
  return text_;
}

}  // namespace marathon::context
