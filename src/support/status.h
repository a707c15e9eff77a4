// Status / Result for user-facing errors, and MG_CHECK for broken invariants.
//
// User errors (a malformed program, an invalid uGraph, a shape mismatch) travel as values:
// a function that can fail on user input returns Status or Result<T>, whose message names the
// place (line:column, op, tensor) and the reason. Broken internal invariants use MG_CHECK, which
// stays on in release builds and throws InternalError (the CLI maps it to exit code 2).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace mugraph {

// An error that means mugraph itself is wrong, never the user's input.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);

class Status {
 public:
  Status() = default;  // ok
  static Status error(std::string msg) { return Status(std::move(msg)); }
  bool ok() const { return !failed_; }
  const std::string& message() const { return msg_; }
  // Prepends context ("in op 3 (matmul): ") to an error; a no-op on ok.
  Status with_context(const std::string& ctx) const {
    return ok() ? *this : Status(ctx + msg_);
  }

 private:
  explicit Status(std::string msg) : msg_(std::move(msg)), failed_(true) {}
  std::string msg_;
  bool failed_ = false;
};

inline Status ok_status() { return Status(); }

// Builds an error Status from stream-style pieces: error("dim ", d, " out of range").
template <class... Args>
Status error(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return Status::error(os.str());
}

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status s) : v_(std::move(s)) {      // NOLINT
    if (std::get<Status>(v_).ok()) check_failed(__FILE__, __LINE__, "!ok", "Result from ok Status");
  }
  bool ok() const { return v_.index() == 0; }
  const T& value() const& { return get(); }
  T&& value() && { return std::move(const_cast<T&>(get())); }
  const T& operator*() const { return get(); }
  const T* operator->() const { return &get(); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

 private:
  const T& get() const {
    if (!ok()) check_failed(__FILE__, __LINE__, "ok()", "value() of failed Result: " +
                                                            std::get<Status>(v_).message());
    return std::get<T>(v_);
  }
  std::variant<T, Status> v_;
};

}  // namespace mugraph

// Returns early from the enclosing function if a Status-valued expression failed.
#define MG_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::mugraph::Status _mg_st = (expr);      \
    if (!_mg_st.ok()) return _mg_st;        \
  } while (0)

#define MG_CONCAT_INNER(a, b) a##b
#define MG_CONCAT(a, b) MG_CONCAT_INNER(a, b)
// `MG_ASSIGN_OR_RETURN(auto x, f());` binds the value or propagates the error.
#define MG_ASSIGN_OR_RETURN(lhs, expr) \
  MG_ASSIGN_OR_RETURN_IMPL(MG_CONCAT(_mg_res_, __LINE__), lhs, expr)
#define MG_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

// Invariant check that stays on in release builds.
#define MG_CHECK(cond, ...)                                                                \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::ostringstream _mg_os;                                                           \
      _mg_os << "" __VA_OPT__(<< __VA_ARGS__);                                             \
      ::mugraph::check_failed(__FILE__, __LINE__, #cond, _mg_os.str());                    \
    }                                                                                      \
  } while (0)
