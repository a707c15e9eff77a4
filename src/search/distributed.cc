#include "search/distributed.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "expr/abstract.h"
#include "ir/text.h"
#include "search/enumerate.h"
#include "search/screen_task.h"

namespace mugraph::search {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

using namespace wire;  // NOLINT: the protocol's tags read as words here

void send_json(Transport& t, int dest, Tag tag, const json& j) { t.send(dest, tag, j.dump()); }

}  // namespace

// ---- Rank 0 ---------------------------------------------------------------------------------

Ranks::Ranks(Transport& t, double timeout_s, std::function<void(const std::string&)> log)
    : t_(t), timeout_s_(timeout_s), log_(std::move(log)), peers_(static_cast<size_t>(t.size())) {
  peers_[0].alive = false;  // itself
}

Ranks::~Ranks() {
  for (int r = 1; r < t_.size(); ++r)
    if (peers_[static_cast<size_t>(r)].alive) send_json(t_, r, kQuit, json::object());
}

int Ranks::lost() const { return t_.size() - 1 - live(); }

int Ranks::live() const {
  int n = 0;
  for (const Peer& p : peers_) n += p.alive;
  return n;
}

void Ranks::drop(int rank, const std::string& why) {
  Peer& p = peers_[static_cast<size_t>(rank)];
  if (!p.alive) return;
  p.alive = false;
  send_json(t_, rank, kQuit, json::object());  // in case it lives (it could not run a space)
  t_.forget(rank);
  if (log_)
    log_("search: rank " + std::to_string(rank) + " " + why + "; its " +
         std::to_string(p.running.size()) + " running task(s) run again elsewhere");
}

std::string oracle_signature(const expr::Oracle& oracle) {
  const expr::SaturationReport& s = oracle.stats().saturation;
  std::ostringstream os;
  os << s.stop_reason << " after " << s.iterations << " iterations, " << s.nodes << " nodes, "
     << s.classes << " classes";
  return os.str();
}

RankRunner::RankRunner(Ranks& ranks, const std::string& space, const std::string& oracle,
                       int tasks, const Deadline& deadline,
                       std::function<void(int, TaskResult)> store)
    : r_(ranks), space_(ranks.next_space_++), store_(std::move(store)) {
  const double left = deadline.left();
  const json begin = {{"space", space_},
                      {"text", space},
                      {"oracle", oracle},
                      {"tasks", tasks},
                      {"seconds_left", std::isfinite(left) ? json(std::max(left, 1e-3)) : json()}};
  const std::string text = begin.dump();
  for (int r = 1; r < r_.t_.size(); ++r) {
    Ranks::Peer& p = r_.peers_[static_cast<size_t>(r)];
    p.running.clear();
    p.states = 0;
    p.ready = false;
    if (p.alive) r_.t_.send(r, kBegin, text);
  }
}

RankRunner::~RankRunner() {
  for (int r = 1; r < r_.t_.size(); ++r)
    if (r_.peers_[static_cast<size_t>(r)].alive)
      send_json(r_.t_, r, kEnd, {{"space", space_}});
}

int RankRunner::in_flight() const {
  int n = 0;
  for (const Ranks::Peer& p : r_.peers_)
    if (p.alive) n += static_cast<int>(p.running.size());
  return n;
}

void RankRunner::receive(const Message& m, Pumped& p) {
  Ranks::Peer& peer = r_.peers_.at(static_cast<size_t>(m.source));
  if (!peer.alive) return;  // taken for dead: its tasks already run elsewhere
  try {
    const json j = json::parse(m.data);
    if (m.tag == kHello) {
      peer.capacity = std::max(1, j.at("threads").get<int>());
      return;
    }
    if (j.at("space").get<int>() != space_) return;  // an earlier space's last words
    if (m.tag == kError)
      return drop(m.source, "cannot run this search space (" +
                                j.at("message").get<std::string>() + ")", p);
    if (m.tag == kReady) {
      peer.ready = true;
      return;
    }
    const uint64_t states = j.at("states");
    if (states > peer.states) p.states += states - peer.states, peer.states = states;
    if (m.tag != kResult) return;
    const int task = j.at("task");
    auto it = std::find(peer.running.begin(), peer.running.end(), task);
    if (it == peer.running.end()) return;
    peer.running.erase(it);
    auto tr = read_task_result(j.at("result").get<std::string>());
    if (!tr.ok()) {  // a rank that garbles results is not to be trusted with more tasks
      p.lost.push_back(task);
      return drop(m.source, "sent a result that does not parse (" + tr.status().message() + ")",
                  p);
    }
    const auto stop = static_cast<StopReason>(j.at("stop").get<int>());
    if (!tr->done && stop != StopReason::kExhausted) p.stop = stop;
    store_(task, std::move(*tr));
  } catch (const json::exception& e) {
    drop(m.source, std::string("sent a message that does not parse (") + e.what() + ")", p);
  }
}

void RankRunner::drop(int rank, const std::string& why, Pumped& p) {
  Ranks::Peer& peer = r_.peers_[static_cast<size_t>(rank)];
  p.lost.insert(p.lost.end(), peer.running.begin(), peer.running.end());
  r_.drop(rank, why);
  peer.running.clear();
}

RemoteRunner::Pumped RankRunner::pump(const TakeTask& take, StopReason stop,
                                      std::chrono::milliseconds wait) {
  Pumped p;
  Transport& t = r_.t_;
  bool arrived = false;
  while (std::optional<Message> m = t.poll()) {
    receive(*m, p);
    arrived = true;
  }
  for (int r = 1; r < t.size(); ++r) {
    Ranks::Peer& peer = r_.peers_[static_cast<size_t>(r)];
    if (!peer.alive || t.silent_seconds(r) <= r_.timeout_s_) continue;
    std::ostringstream why;
    why << "was silent for " << r_.timeout_s_ << " s (taken for dead)";
    drop(r, why.str(), p);
  }
  if (stop != told_stop_) {
    told_stop_ = stop;
    for (int r = 1; r < t.size(); ++r)
      if (r_.peers_[static_cast<size_t>(r)].alive)
        send_json(t, r, kStop, {{"space", space_}, {"reason", static_cast<int>(stop)}});
  }
  for (int r = 1; r < t.size(); ++r) {
    Ranks::Peer& peer = r_.peers_[static_cast<size_t>(r)];
    // One task more than its threads: the next one waits there while a result travels back.
    while (peer.alive && peer.ready && static_cast<int>(peer.running.size()) < peer.capacity + 1) {
      std::optional<std::pair<int, bool>> task = take();
      if (!task) break;
      peer.running.push_back(task->first);
      send_json(t, r, kTask, {{"space", space_}, {"task", task->first}, {"relaxed", task->second}});
    }
  }
  if (!arrived) std::this_thread::sleep_for(wait);
  return p;
}

// ---- The other ranks --------------------------------------------------------------------------

namespace {

// A program's oracle and the expression pool it lives in.
struct OracleHolder {
  expr::ExprPool pool;
  std::unique_ptr<expr::Oracle> oracle;
};

// A space being served: its program, options, oracle and enumerator, and how its tasks stop.
struct ServedSpace {
  int id = 0;
  ir::KernelGraph program;
  SearchOptions options;
  std::shared_ptr<OracleHolder> oracle;
  std::unique_ptr<Enumerator> enumerator;
  Deadline deadline;
  std::atomic<int> stop{static_cast<int>(StopReason::kExhausted)};
  std::atomic<uint64_t> states{0};
};

struct Job {
  std::shared_ptr<ServedSpace> space;
  int task;
  bool relaxed;
};

// The rank's threads: they run the tasks rank 0 sends and queue their results.
class Server {
 public:
  Server(Transport& t, int threads, const std::atomic<bool>* cancel)
      : t_(t), cancel_(cancel), over_memory_(search_memory_check()) {
    const int n = thread_count(threads);
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
    send_json(t_, 0, kHello, {{"threads", n}});
  }
  ~Server() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (std::thread& th : threads_) th.join();
  }
  // Handles one message from rank 0; false on QUIT.
  bool handle(const Message& m);
  // Sends the finished tasks' results and, twice a second, the state count.
  void flush();

 private:
  void begin(const json& j);
  void work();
  bool should_stop(ServedSpace& s, uint64_t n, bool relaxed);

  Transport& t_;
  const std::atomic<bool>* cancel_;
  std::function<bool()> over_memory_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> quit_{false};              // set under mu_ (for cv_), read freely
  std::deque<Job> jobs_;                       // guarded by mu_
  std::vector<std::string> results_;           // guarded by mu_: RESULT texts to send
  std::shared_ptr<ServedSpace> current_;       // the main thread's
  std::shared_ptr<OracleHolder> oracle_;       // the last space's, and its program's key
  std::string oracle_key_;
  Clock::time_point last_status_ = Clock::now();
};

void Server::begin(const json& j) {
  auto s = std::make_shared<ServedSpace>();
  s->id = j.at("space");
  // The deadline runs from BEGIN's arrival, building the oracle included, as on rank 0.
  if (!j.at("seconds_left").is_null())
    s->deadline = Deadline::after(j.at("seconds_left").get<double>());
  s->deadline.with_cancel(cancel_);
  auto fail = [&](const std::string& why) {
    send_json(t_, 0, kError, {{"space", s->id}, {"message", why}});
  };
  if (Status st = read_space(j.at("text").get<std::string>(), s->program, s->options); !st.ok())
    return fail(st.message());
  // The oracle depends on the program and the oracle options only: a planned search's stages
  // of one part share it, as on rank 0.
  const std::string key = ir::print_graph(s->program) + "|" +
                          std::to_string(static_cast<int>(s->options.oracle.mode)) + "|" +
                          std::to_string(s->options.oracle.unsaturated_rounds) + "|" +
                          std::to_string(s->options.oracle.z3_fallback_budget_s);
  if (!oracle_ || oracle_key_ != key) {
    oracle_.reset();  // the old one may still be in use by a running task: shared_ptr
    auto o = std::make_shared<OracleHolder>();
    const expr::GraphExprs ge = expr::abstract_expressions(s->program, o->pool);
    o->oracle = std::make_unique<expr::Oracle>(o->pool, ge.outputs, s->options.oracle);
    oracle_ = std::move(o);
    oracle_key_ = key;
  }
  s->oracle = oracle_;
  if (const std::string mine = oracle_signature(*oracle_->oracle);
      mine != j.at("oracle").get<std::string>())
    return fail("its oracle's e-graph ended " + mine + ", rank 0's " +
                j.at("oracle").get<std::string>() +
                ": pruning could differ (saturation cut by its time limit on one of them?)");
  s->enumerator =
      std::make_unique<Enumerator>(s->program, s->options, oracle_->pool, *oracle_->oracle);
  if (s->enumerator->task_count() != j.at("tasks").get<int>())
    return fail("the space has " + std::to_string(s->enumerator->task_count()) + " tasks here, " +
                std::to_string(j.at("tasks").get<int>()) + " on rank 0 (another mugraph version?)");
  current_ = std::move(s);
  send_json(t_, 0, kReady, {{"space", current_->id}});
}

bool Server::handle(const Message& m) {
  const json j = json::parse(m.data);
  switch (m.tag) {
    case kBegin: begin(j); return true;
    case kTask:
      if (current_ && current_->id == j.at("space").get<int>()) {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back({current_, j.at("task"), j.at("relaxed")});
        cv_.notify_one();
      }
      return true;
    case kStop:
      if (current_ && current_->id == j.at("space").get<int>()) {
        // A first stop, or one that ends relaxed tasks too after a state limit.
        const int why = j.at("reason");
        int now = current_->stop.load();
        while ((now == static_cast<int>(StopReason::kExhausted) ||
                now == static_cast<int>(StopReason::kStateLimit)) &&
               why != static_cast<int>(StopReason::kExhausted) &&
               !current_->stop.compare_exchange_weak(now, why)) {
        }
      }
      return true;
    case kEnd:
      if (current_ && current_->id == j.at("space").get<int>()) current_.reset();
      return true;
    case kQuit: return false;
    default: return true;
  }
}

bool Server::should_stop(ServedSpace& s, uint64_t n, bool relaxed) {
  s.states += n;
  auto stop_for = [&s](StopReason why) {
    int expected = static_cast<int>(StopReason::kExhausted);
    s.stop.compare_exchange_strong(expected, static_cast<int>(why));
    return true;
  };
  const auto code = static_cast<StopReason>(s.stop.load());
  if (code != StopReason::kExhausted && !(relaxed && code == StopReason::kStateLimit)) return true;
  if (quit_) return true;  // polled every few hundred states: no lock
  if (s.deadline.passed())
    return stop_for(s.deadline.cancelled() ? StopReason::kCancelled : StopReason::kTimeLimit);
  if (over_memory_()) return stop_for(StopReason::kMemoryLimit);
  return false;
}

void Server::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return quit_ || !jobs_.empty(); });
      if (quit_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    ServedSpace& s = *job.space;
    const bool relaxed = job.relaxed;
    const StopCheck stop = [this, &s, relaxed](uint64_t n) { return should_stop(s, n, relaxed); };
    const TaskContext c{s.program, s.options, *s.enumerator, s.deadline, {}};
    const TaskResult tr = run_screened_task(c, job.task, stop);
    const json result = {{"space", s.id},
                         {"task", job.task},
                         {"result", task_result_text(tr)},
                         {"stop", tr.done ? 0 : s.stop.load()},
                         {"states", s.states.load()}};
    std::lock_guard<std::mutex> lock(mu_);
    results_.push_back(result.dump());
  }
}

void Server::flush() {
  std::vector<std::string> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(results_);
  }
  for (std::string& r : out) t_.send(0, kResult, std::move(r));
  if (current_ && Clock::now() - last_status_ > std::chrono::milliseconds(500)) {
    send_json(t_, 0, kStatus, {{"space", current_->id}, {"states", current_->states.load()}});
    last_status_ = Clock::now();
  }
}

}  // namespace

int serve_tasks(Transport& t, int threads, const std::atomic<bool>* cancel, double timeout_s) {
  Server server(t, threads, cancel);
  for (;;) {
    bool any = false;
    while (std::optional<Message> m = t.poll()) {
      any = true;
      try {
        if (!server.handle(*m)) return 0;
      } catch (const json::exception& e) {
        std::cerr << "mugraph rank " << t.rank() << ": bad message from rank 0 (" << e.what()
                  << "); ignored\n";
      }
    }
    server.flush();
    if (t.silent_seconds(0) > timeout_s) {
      std::cerr << "mugraph rank " << t.rank() << ": rank 0 was silent for " << timeout_s
                << " s; stopping\n";
      return 1;
    }
    if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace mugraph::search
