// AUROC over every score seen, in bounded memory (metrics.h says how), merged over data-parallel
// ranks by concatenating their states.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/state.h"
#include "metrics/kinds.h"

namespace baton {

// One class's distinct scores, ascending, each with its positives and negatives; the scores not yet
// merged in; how many significant bits a score keeps (52: exact).
struct Auroc::Scores {
  struct Entry {
    double score;
    double positives;
    double negatives;
  };
  std::vector<Entry> sorted;
  std::vector<Entry> pending;
  int bits = 52;
};

namespace {

constexpr std::size_t kPendingMax = std::size_t{1} << 20;  // scores waiting to be merged, all classes

// `x` rounded to `bits` significant bits (monotone: a larger x never rounds below a smaller one).
double round_to_bits(double x, int bits) {
  if (bits >= 52 || x == 0.0 || !std::isfinite(x)) return x;
  int exponent = 0;
  const double mantissa = std::frexp(x, &exponent);
  return std::ldexp(std::round(std::ldexp(mantissa, bits)), exponent - bits);
}

// Sorted entries with equal scores added together.
void sort_and_merge(std::vector<Auroc::Scores::Entry>& entries) {
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.score < b.score; });
  std::size_t out = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (out > 0 && entries[out - 1].score == entries[i].score) {
      entries[out - 1].positives += entries[i].positives;
      entries[out - 1].negatives += entries[i].negatives;
    } else {
      entries[out++] = entries[i];
    }
  }
  entries.resize(out);
}

void flush_class(Auroc::Scores& s, std::size_t cap) {
  if (s.pending.empty()) return;
  for (auto& e : s.pending) e.score = round_to_bits(e.score, s.bits);
  s.sorted.insert(s.sorted.end(), s.pending.begin(), s.pending.end());
  s.pending.clear();
  s.pending.shrink_to_fit();
  sort_and_merge(s.sorted);
  while (s.sorted.size() > cap && s.bits > 4) {  // coarser scores until it fits with room to spare
    s.bits -= 4;
    for (auto& e : s.sorted) e.score = round_to_bits(e.score, s.bits);
    sort_and_merge(s.sorted);
    if (s.sorted.size() <= cap / 2) break;
  }
}

// The Mann-Whitney statistic: the share of (positive, negative) pairs ranked right, ties half.
double area(const std::vector<Auroc::Scores::Entry>& sorted) {
  double negatives_below = 0, pairs_right = 0, positives = 0;
  for (const auto& e : sorted) {
    pairs_right += e.positives * (negatives_below + 0.5 * e.negatives);
    negatives_below += e.negatives;
    positives += e.positives;
  }
  if (positives == 0 || negatives_below == 0) return std::numeric_limits<double>::quiet_NaN();
  return pairs_right / (positives * negatives_below);
}

}  // namespace

Auroc::Auroc(TaskKind task, std::size_t max_scores) : task_(task), max_scores_(std::max<std::size_t>(max_scores, 16)) {}

std::size_t Auroc::stored_scores() const {
  flush();
  std::size_t n = 0;
  for (const auto& c : classes_) n += c.sorted.size();
  return n;
}
Auroc::~Auroc() = default;

void Auroc::update(const at::Tensor& sequence_outputs, const at::Tensor& sequence_targets) {
  const auto [outputs, targets] = positions_as_rows(sequence_outputs, sequence_targets);
  const int64_t k = outputs.size(1);
  at::Tensor scores;  // [N, C] float64 on the host, a column a class (or label)
  at::Tensor truth;   // [N, C] 0/1
  if (task_ == TaskKind::kClasses) {
    scores = torch::softmax(outputs.to(torch::kDouble), 1);
    const at::Tensor index =
        targets.dim() == 2 && at::isFloatingType(targets.scalar_type()) ? targets.argmax(1) : targets.to(torch::kLong);
    truth = torch::nn::functional::one_hot(index, k);
  } else {
    scores = outputs.to(torch::kDouble);
    truth = targets.dim() == 1 && !at::isFloatingType(targets.scalar_type()) && k > 1
                ? torch::nn::functional::one_hot(targets, k)
                : targets.reshape(outputs.sizes()).gt(0.5);
  }
  scores = scores.to(torch::kCPU).contiguous();
  truth = truth.to(torch::kCPU, torch::kByte).contiguous();
  if (classes_.empty()) classes_.resize(static_cast<std::size_t>(k));
  if (classes_.size() != static_cast<std::size_t>(k)) {
    throw std::invalid_argument("auroc: outputs of " + std::to_string(k) + " columns after batches of " +
                                std::to_string(classes_.size()));
  }
  const double* s = scores.data_ptr<double>();
  const uint8_t* t = truth.data_ptr<uint8_t>();
  const int64_t n = outputs.size(0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      const bool positive = t[i * k + c] != 0;
      classes_[static_cast<std::size_t>(c)].pending.push_back(
          {s[i * k + c], positive ? 1.0 : 0.0, positive ? 0.0 : 1.0});
    }
  }
  if (classes_.front().pending.size() * classes_.size() >= kPendingMax) flush();
}

void Auroc::flush() const {
  const std::size_t cap = std::max<std::size_t>(16, max_scores_ / std::max<std::size_t>(1, classes_.size()));
  for (auto& c : classes_) flush_class(c, cap);
}

double Auroc::compute() const {
  if (classes_.empty()) throw std::logic_error("metric 'auroc' has seen no examples");
  flush();
  double sum = 0;
  int counted = 0;
  for (const auto& c : classes_) {
    const double a = area(c.sorted);
    if (std::isnan(a)) continue;  // a class with no positives or no negatives
    sum += a;
    ++counted;
  }
  return counted > 0 ? sum / counted : std::numeric_limits<double>::quiet_NaN();
}

void Auroc::reset() { classes_.clear(); }

// [classes, then for each: bits, entries, then (score, positives, negatives) each].
std::vector<double> Auroc::sums() const {
  flush();
  std::vector<double> out{static_cast<double>(classes_.size())};
  for (const auto& c : classes_) {
    out.push_back(c.bits);
    out.push_back(static_cast<double>(c.sorted.size()));
    for (const auto& e : c.sorted) out.insert(out.end(), {e.score, e.positives, e.negatives});
  }
  return out;
}

// Every rank's sums() one after another: merged.
void Auroc::set_sums(const std::vector<double>& sums) {
  classes_.clear();
  std::size_t at = 0;
  auto next = [&]() {
    if (at >= sums.size()) throw std::invalid_argument("auroc: set_sums: the states end early");
    return sums[at++];
  };
  while (at < sums.size()) {
    const auto classes = static_cast<std::size_t>(next());
    if (classes == 0) continue;  // a rank that saw nothing
    if (classes_.empty()) classes_.resize(classes);
    if (classes != classes_.size()) throw std::invalid_argument("auroc: set_sums: ranks disagree on the classes");
    for (auto& c : classes_) {
      const int bits = static_cast<int>(next());
      const auto entries = static_cast<std::size_t>(next());
      c.bits = std::min(c.bits, bits);
      for (std::size_t i = 0; i < entries; ++i) {
        const double score = next();
        const double positives = next();
        c.pending.push_back({score, positives, next()});
      }
    }
  }
  flush();
}

}  // namespace baton
