// Deadlines: when work must stop (a time budget, Ctrl-C), and the one this thread's long loops
// check.
//
// A phase of a command gets a Deadline (Deadline::after(seconds), or a share of its caller's);
// code that may run long installs it for its thread with a DeadlineScope, and the loops that
// can take seconds (the verifier's evaluators, the interpreter: per op, per block, per matmul
// row block) call check_deadline(), which throws DeadlinePassed once it has passed. Whoever
// installed the scope catches it and reports the phase as cut; nothing partial is kept (caches
// insert only finished results). Threads started inside such work install their parent's
// deadline (current_deadline()).
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

namespace mugraph {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  Deadline() = default;  // none: never passes (unless `cancel` is set)
  // `seconds` from now; <= 0 or not finite: none.
  static Deadline after(double seconds);
  static Deadline at(Clock::time_point t);

  // A flag that, once set (Ctrl-C), makes the deadline pass; kept by share() and earliest().
  Deadline& with_cancel(const std::atomic<bool>* cancel) {
    cancel_ = cancel;
    return *this;
  }
  const std::atomic<bool>* cancel() const { return cancel_; }

  bool none() const { return !at_; }
  // Seconds left (+inf when none; negative once passed).
  double left() const;
  bool passed() const;
  bool cancelled() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }
  // `fraction` of the time left from now, never later than this deadline; none stays none.
  Deadline share(double fraction) const;
  // The earlier of the two (the cancel flag of this one, else of `o`).
  Deadline earliest(const Deadline& o) const;

 private:
  std::optional<Clock::time_point> at_;
  const std::atomic<bool>* cancel_ = nullptr;
};

// Thrown by check_deadline(); what() names the deadline ("time budget" or "cancelled").
struct DeadlinePassed : std::runtime_error {
  explicit DeadlinePassed(bool cancelled)
      : std::runtime_error(cancelled ? "cancelled" : "time budget"), cancelled(cancelled) {}
  bool cancelled;
};

// Installs `d` as this thread's deadline for the scope's lifetime (nesting: the earlier of the
// two holds, and the outer one is restored).
class DeadlineScope {
 public:
  explicit DeadlineScope(const Deadline& d);
  ~DeadlineScope();
  DeadlineScope(const DeadlineScope&) = delete;
  DeadlineScope& operator=(const DeadlineScope&) = delete;

 private:
  Deadline prev_;
};

// This thread's deadline (none outside any DeadlineScope).
const Deadline& current_deadline();

// Throws DeadlinePassed when this thread's deadline has passed. About 20 ns when one is set,
// less when none: call it once per row or block of a long loop, not per element.
void check_deadline();

}  // namespace mugraph
