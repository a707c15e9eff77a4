#include "support/deadline.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mugraph {
namespace {
thread_local Deadline tls_deadline;
}  // namespace

Deadline Deadline::after(double seconds) {
  Deadline d;
  if (seconds > 0 && std::isfinite(seconds))
    d.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(seconds));
  return d;
}

Deadline Deadline::at(Clock::time_point t) {
  Deadline d;
  d.at_ = t;
  return d;
}

double Deadline::left() const {
  if (!at_) return std::numeric_limits<double>::infinity();
  return std::chrono::duration<double>(*at_ - Clock::now()).count();
}

bool Deadline::passed() const { return cancelled() || (at_ && Clock::now() >= *at_); }

Deadline Deadline::share(double fraction) const {
  Deadline d = *this;
  if (!at_) return d;
  const double left_s = std::max(0.0, left());
  d.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(left_s * std::clamp(fraction, 0.0, 1.0)));
  return d;
}

Deadline Deadline::earliest(const Deadline& o) const {
  Deadline d = *this;
  if (!d.at_ || (o.at_ && *o.at_ < *d.at_)) d.at_ = o.at_;
  if (!d.cancel_) d.cancel_ = o.cancel_;
  return d;
}

DeadlineScope::DeadlineScope(const Deadline& d) : prev_(tls_deadline) {
  tls_deadline = d.earliest(prev_);
}

DeadlineScope::~DeadlineScope() { tls_deadline = prev_; }

const Deadline& current_deadline() { return tls_deadline; }

void check_deadline() {
  const Deadline& d = tls_deadline;
  if (d.none() && !d.cancel()) return;
  if (d.passed()) throw DeadlinePassed(d.cancelled());
}

}  // namespace mugraph
