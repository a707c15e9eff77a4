// Message passing between the processes of one job (the ranks of an MPI launch), for the
// search's distributed task pool (search/distributed.h).
//
// A Transport moves byte strings tagged with a small integer between ranks 0..size()-1. It
// never blocks: send() queues, poll() returns what has arrived. Each rank also hears a
// heartbeat from its peers (every kHeartbeatSeconds, sent and received by the transport
// itself, whatever the rest of the process is doing), so silent_seconds(peer) tells a live but
// busy peer from a dead one.
//
//   join_mpi()       the job's transport under an MPI launcher with more than one rank
//                    (mpirun sets OMPI_COMM_WORLD_SIZE; Hydra PMI_SIZE): MPI itself is loaded
//                    at run time from the plugin libmugraph_mpi.so (built beside the mugraph
//                    binary when MPI was found), so a single-process mugraph needs no MPI.
//   LocalHub         in-process ranks for tests: one endpoint per rank, kill(rank) drops a
//                    rank as a crashed process would be dropped.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "support/status.h"

namespace mugraph {

struct Message {
  int source = -1;
  int tag = 0;
  std::string data;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The ranks on this rank's machine (they share its cores).
  virtual int local_size() const { return 1; }
  // Queues `data` for rank `dest` (tags 0..kMaxTag); never waits for the peer.
  virtual void send(int dest, int tag, std::string data) = 0;
  // The next message that arrived for this rank (heartbeats excluded), if any; never waits.
  virtual std::optional<Message> poll() = 0;
  // Seconds since anything (a message or a heartbeat) last came from `peer`.
  virtual double silent_seconds(int peer) const = 0;
  // `peer` is taken for dead: nothing more is sent to it (what is still queued is dropped).
  virtual void forget(int peer) { (void)peer; }
  // Ends the whole job now with exit code `code`, without waiting for the other ranks: for a
  // job that lost a rank (MPI_Finalize would wait for it forever). MPI: does not return.
  virtual void end_job(int code) { (void)code; }
};

// Peers send heartbeats this often; a peer silent for many times this long is gone.
constexpr double kHeartbeatSeconds = 0.25;
// Tags available to users of a Transport (the MPI transport keeps one above for heartbeats).
constexpr int kMaxTag = 1000;

// Under an MPI launcher with two or more ranks: joins the job (MPI_Init through the plugin)
// and returns its transport; the transport's destruction leaves it (MPI_Finalize). Null when
// the process was not launched so, or as a single rank. An error when it was launched with
// several ranks but MPI cannot be loaded (no plugin: mugraph built without MPI), saying so.
Result<std::unique_ptr<Transport>> join_mpi(int* argc, char*** argv);

// In-process ranks (tests of the distributed search without MPI).
class LocalHub {
 public:
  explicit LocalHub(int size);
  ~LocalHub();
  Transport& endpoint(int rank);
  // Rank `rank` crashes: what it sends is dropped, nothing more reaches it, and its peers stop
  // hearing from it (their silent_seconds grows from now).
  void kill(int rank);
  // Rank `rank` dies as it tries to send its `n`-th message (that one is lost too); with a
  // `tag` (>= 0), its n-th message of that tag (a test then need not count the others, such as
  // messages sent on a timer).
  void kill_at_send(int rank, int n, int tag = -1);
  bool killed(int rank) const;

 private:
  class Endpoint;
  friend class Endpoint;
  struct Box {
    std::deque<Message> inbox;
    bool dead = false;
    int sends = 0, die_at_send = 0;  // 0: never
    int die_tag = -1;                // -1: every send counts
    std::chrono::steady_clock::time_point died;
    // Peers this rank forgot (Transport::forget), and when: they hear nothing more from it.
    std::vector<std::optional<std::chrono::steady_clock::time_point>> forgot;
  };
  void kill_locked(int rank);

  mutable std::mutex mu_;
  std::vector<Box> boxes_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
};

}  // namespace mugraph
