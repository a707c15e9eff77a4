// The search over several processes (`mpirun -np N mugraph search|optimize ...`): rank 0 runs
// the command; the other ranks serve it, running the tasks of each search space rank 0 hands
// them (dynamic hand-out from the task pool's queue, task_pool.h), and send back each task's
// result. Rank 0 merges results in task order, as it does its own threads', so any number of
// ranks gives the same candidates, the same best and the same checkpoints (which only rank 0
// writes, so --resume works as without MPI).
//
// Protocol (JSON texts over a Transport, support/transport.h), per search space:
//   rank 0 -> r   BEGIN {space id, space_text, task count, seconds left, rank 0's oracle}: r
//                 builds the program's oracle (kept for the next space of the same program) and
//                 the enumerator, checks that its oracle's e-graph came out as rank 0's and the
//                 task count, and answers READY {space}, or ERROR {space, message}: rank 0 then
//                 says why on stderr and runs without it (its tasks, if any, elsewhere)
//   rank 0 -> r   TASK {space, task, relaxed}           once r is READY, as r has room (its
//                                                        threads, plus one)
//   r -> rank 0   RESULT {space, task, result, stop, states}   (result: checkpoint.h's text)
//   r -> rank 0   STATUS {space, states}                 twice a second: the state count
//   rank 0 -> r   STOP {space, reason}                   the stop policy fired (budget, ...);
//                                                        again if a state limit is followed by
//                                                        a stop that ends relaxed tasks too
//   rank 0 -> r   END {space};  QUIT at the end of the command
//   r -> rank 0   HELLO {threads} once, when it starts.
// A rank silent (no heartbeat: the transport beats on its own thread) for longer than the
// rank timeout is taken for dead: its tasks go back to the queue and run elsewhere from their
// start, and its late messages are ignored. A rank that hears nothing from rank 0 for that long
// stops. Open MPI ends the whole job when a rank dies unless mpirun is given --enable-recovery;
// with it, the job goes on, and ends through Transport::end_job (MPI_Abort with the command's
// exit code) since MPI_Finalize would wait for the dead rank.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "expr/oracle.h"
#include "search/checkpoint.h"
#include "search/task_pool.h"
#include "support/transport.h"

namespace mugraph::search {

// The protocol's message kinds: a Transport message's tag.
namespace wire {
enum Tag : int { kHello = 1, kBegin, kReady, kTask, kStop, kEnd, kQuit, kStatus, kResult, kError };
}  // namespace wire

// Seconds a rank may be silent before it is taken for dead (CLI --rank-timeout). Heartbeats
// come every kHeartbeatSeconds from a thread of their own, so only a dead process, a stopped
// one or a broken network stays silent this long.
constexpr double kDefaultRankTimeoutSeconds = 10;

// Rank 0's view of the other ranks, kept across the command's search spaces.
class Ranks {
 public:
  // `log` receives one line per event worth telling the user (a rank lost, a rank's error).
  Ranks(Transport& t, double timeout_s, std::function<void(const std::string&)> log = {});
  ~Ranks();  // tells every live rank to quit
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  int live() const;  // other ranks not taken for dead
  int lost() const;  // other ranks taken for dead (the job then ends with Transport::end_job)

  struct Peer {
    bool alive = true;
    bool ready = false;        // it has built the current space (READY came)
    int capacity = 0;          // its threads (0 until its HELLO came)
    std::vector<int> running;  // tasks of the current space handed to it
    uint64_t states = 0;       // its state count in the current space
  };

 private:
  friend class RankRunner;
  void drop(int rank, const std::string& why);  // take for dead; its tasks stay in `running`

  Transport& t_;
  double timeout_s_;
  std::function<void(const std::string&)> log_;
  std::vector<Peer> peers_;  // by rank (rank 0's own entry unused)
  int next_space_ = 1;
};

// What the search's pruning depends on in a built oracle: how its e-graph's saturation ended
// (saturated or cut by which limit, iterations, nodes, classes). Ranks whose oracles differ
// here could prune differently (a time limit hit on one machine only), so a rank whose oracle
// is not rank 0's takes no task.
std::string oracle_signature(const expr::Oracle& oracle);

// One search space's tasks on the other ranks: BEGIN at construction, END at destruction;
// between them, the task pool pumps it (task_pool.h). `store(i, result)` receives task i's
// result (done or cut short) as run_task would produce it. A rank that cannot run the space
// (ERROR), or sends a result that does not parse, is dropped with a line to the log; its
// tasks run elsewhere, so the search's answer is the same.
class RankRunner : public RemoteRunner {
 public:
  RankRunner(Ranks& ranks, const std::string& space, const std::string& oracle, int tasks,
             const Deadline& deadline, std::function<void(int, TaskResult)> store);
  ~RankRunner() override;
  Pumped pump(const TakeTask& take, StopReason stop, std::chrono::milliseconds wait) override;
  int in_flight() const override;

 private:
  void receive(const Message& m, Pumped& p);
  void drop(int rank, const std::string& why, Pumped& p);

  Ranks& r_;
  int space_;
  std::function<void(int, TaskResult)> store_;
  StopReason told_stop_ = StopReason::kExhausted;
};

// What a rank other than 0 does for `search` and `optimize`: serves rank 0 (the protocol
// above) with `threads` threads (0: all cores) until rank 0 says QUIT (returns 0) or goes
// silent for `timeout_s` (returns 1, saying so on stderr). `cancel` (Ctrl-C) stops its tasks.
int serve_tasks(Transport& t, int threads, const std::atomic<bool>* cancel, double timeout_s);

}  // namespace mugraph::search
