#include "support/transport.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <thread>

namespace mugraph {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// ---- MPI, through the plugin (src/support/mpi/mpi_plugin.cc) --------------------------------

// The plugin's C functions (see mpi_plugin.cc for their contracts).
struct MpiPlugin {
  int (*init)(int*, char***, int*, int*, int*, char*, int) = nullptr;
  int (*isend)(int, int, const char*, long long) = nullptr;
  int (*iprobe)(int, int*, int*, long long*) = nullptr;
  int (*recv)(int, int, char*, long long) = nullptr;
  void (*progress)() = nullptr;
  void (*drop_peer)(int) = nullptr;
  void (*abort)(int) = nullptr;
  int (*finalize)() = nullptr;
};

// Tag of the transport's own heartbeats (above every user tag).
constexpr int kHeartbeatTag = kMaxTag + 1;

class MpiTransport : public Transport {
 public:
  MpiTransport(MpiPlugin p, int rank, int size, int local_size)
      : p_(p),
        rank_(rank),
        size_(size),
        local_size_(local_size),
        heard_(static_cast<size_t>(size), Clock::now()),
        forgotten_(static_cast<size_t>(size), false) {
    beat_ = std::thread([this] { heartbeats(); });
  }
  ~MpiTransport() override {
    stop_ = true;
    beat_.join();
    std::lock_guard<std::mutex> lock(mu_);
    p_.progress();
    p_.finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }
  void send(int dest, int tag, std::string data) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (forgotten_.at(static_cast<size_t>(dest))) return;
    if (p_.isend(dest, tag, data.data(), static_cast<long long>(data.size())) != 0)
      std::cerr << "mugraph rank " << rank_ << ": MPI could not send " << data.size()
                << " bytes (tag " << tag << ") to rank " << dest << "\n";
    p_.progress();
  }
  std::optional<Message> poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    p_.progress();
    for (;;) {
      std::optional<Message> m = receive(-1);
      if (!m || m->tag != kHeartbeatTag) return m;
    }
  }
  double silent_seconds(int peer) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return seconds_since(heard_.at(static_cast<size_t>(peer)));
  }
  void end_job(int code) override {
    stop_ = true;
    beat_.join();
    std::lock_guard<std::mutex> lock(mu_);
    p_.abort(code);
  }
  void forget(int peer) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (forgotten_.at(static_cast<size_t>(peer))) return;
    forgotten_[static_cast<size_t>(peer)] = true;
    p_.drop_peer(peer);
  }

 private:
  // Under mu_: one waiting message with `tag` (-1: any), received.
  std::optional<Message> receive(int tag) {
    int source = -1, got_tag = 0;
    long long len = 0;
    if (p_.iprobe(tag, &source, &got_tag, &len) != 1) return std::nullopt;
    Message m{source, got_tag, std::string(static_cast<size_t>(len), '\0')};
    if (p_.recv(source, got_tag, m.data.data(), len) != 0) {
      std::cerr << "mugraph rank " << rank_ << ": MPI could not receive " << len
                << " bytes (tag " << got_tag << ") from rank " << source << "; dropped\n";
      m.data.clear();
      m.tag = kHeartbeatTag;  // not handed out: poll() skips it like a heartbeat
    }
    if (source >= 0 && source < size_) heard_[static_cast<size_t>(source)] = Clock::now();
    return m;
  }
  // Rank 0 and every other rank beat to each other (the search is a star around rank 0).
  void heartbeats() {
    while (!stop_) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (int r = 0; r < size_; ++r)
          if (r != rank_ && (rank_ == 0 || r == 0) && !forgotten_[static_cast<size_t>(r)])
            p_.isend(r, kHeartbeatTag, "", 0);
        while (receive(kHeartbeatTag)) {
        }
        p_.progress();
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(kHeartbeatSeconds));
    }
  }

  MpiPlugin p_;
  int rank_, size_, local_size_;
  mutable std::mutex mu_;  // MPI is initialized MPI_THREAD_SERIALIZED: one call at a time
  std::vector<Clock::time_point> heard_;
  std::vector<bool> forgotten_;
  std::atomic<bool> stop_{false};
  std::thread beat_;
};

// The launcher's rank count: Open MPI's mpirun, or a PMI launcher (MPICH's Hydra, Slurm).
int launched_ranks() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

// The plugin: MUGRAPH_MPI_PLUGIN, else libmugraph_mpi.so beside the executable or one folder
// up (the build's bench/ and tests/ binaries), else the loader's search path.
Result<void*> open_plugin() {
  std::vector<std::string> paths;
  if (const char* p = std::getenv("MUGRAPH_MPI_PLUGIN")) paths.push_back(p);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    paths.push_back((exe.parent_path() / "libmugraph_mpi.so").string());
    paths.push_back((exe.parent_path().parent_path() / "libmugraph_mpi.so").string());
  }
  paths.push_back("libmugraph_mpi.so");
  std::string errors;
  for (const std::string& path : paths) {
    // RTLD_GLOBAL: Open MPI's own components resolve MPI symbols from the global scope.
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return h;
    errors += std::string(errors.empty() ? "" : "; ") + dlerror();
  }
  return error(errors);
}

}  // namespace

Result<std::unique_ptr<Transport>> join_mpi(int* argc, char*** argv) {
  const int launched = launched_ranks();
  if (launched <= 1) return std::unique_ptr<Transport>();
  auto h = open_plugin();
  if (!h.ok())
    return error("launched as ", launched, " MPI ranks, but MPI could not be loaded (",
                 h.status().message(), "): build mugraph with MPI installed (libopenmpi-dev) "
                 "so that libmugraph_mpi.so is built beside it, or run it without mpirun");
  MpiPlugin p;
  auto sym = [&](const char* name) { return dlsym(*h, name); };
  p.init = reinterpret_cast<decltype(p.init)>(sym("mugraph_mpi_init"));
  p.isend = reinterpret_cast<decltype(p.isend)>(sym("mugraph_mpi_isend"));
  p.iprobe = reinterpret_cast<decltype(p.iprobe)>(sym("mugraph_mpi_iprobe"));
  p.recv = reinterpret_cast<decltype(p.recv)>(sym("mugraph_mpi_recv"));
  p.progress = reinterpret_cast<decltype(p.progress)>(sym("mugraph_mpi_progress"));
  p.drop_peer = reinterpret_cast<decltype(p.drop_peer)>(sym("mugraph_mpi_drop_peer"));
  p.abort = reinterpret_cast<decltype(p.abort)>(sym("mugraph_mpi_abort"));
  p.finalize = reinterpret_cast<decltype(p.finalize)>(sym("mugraph_mpi_finalize"));
  if (!p.init || !p.isend || !p.iprobe || !p.recv || !p.progress || !p.drop_peer || !p.abort ||
      !p.finalize)
    return error("the MPI plugin lacks a mugraph_mpi_* function (a plugin of another version?)");
  int rank = -1, size = 0, local_size = 1;
  char why[512] = {};
  if (p.init(argc, argv, &rank, &size, &local_size, why, sizeof why) != 0)
    return error("MPI initialization failed: ", why);
  return std::unique_ptr<Transport>(new MpiTransport(p, rank, size, std::max(1, local_size)));
}

// ---- In-process ranks -----------------------------------------------------------------------

class LocalHub::Endpoint : public Transport {
 public:
  Endpoint(LocalHub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(hub_.boxes_.size()); }
  void send(int dest, int tag, std::string data) override {
    std::lock_guard<std::mutex> lock(hub_.mu_);
    Box& to = hub_.boxes_.at(static_cast<size_t>(dest));
    Box& me = hub_.boxes_[static_cast<size_t>(rank_)];
    if (!me.dead && (me.die_tag < 0 || tag == me.die_tag) && ++me.sends == me.die_at_send)
      hub_.kill_locked(rank_);
    if (me.dead || to.dead || me.forgot[static_cast<size_t>(dest)]) return;
    to.inbox.push_back({rank_, tag, std::move(data)});
  }
  std::optional<Message> poll() override {
    std::lock_guard<std::mutex> lock(hub_.mu_);
    Box& me = hub_.boxes_[static_cast<size_t>(rank_)];
    if (me.dead || me.inbox.empty()) return std::nullopt;
    Message m = std::move(me.inbox.front());
    me.inbox.pop_front();
    return m;
  }
  double silent_seconds(int peer) const override {
    std::lock_guard<std::mutex> lock(hub_.mu_);
    const Box& me = hub_.boxes_[static_cast<size_t>(rank_)];
    const Box& p = hub_.boxes_.at(static_cast<size_t>(peer));
    if (me.dead) return std::numeric_limits<double>::infinity();  // a dead rank hears nothing
    if (p.dead) return seconds_since(p.died);
    if (const auto& f = p.forgot[static_cast<size_t>(rank_)]) return seconds_since(*f);
    return 0.0;  // a live in-process peer always beats
  }
  void forget(int peer) override {
    std::lock_guard<std::mutex> lock(hub_.mu_);
    auto& f = hub_.boxes_[static_cast<size_t>(rank_)].forgot.at(static_cast<size_t>(peer));
    if (!f) f = Clock::now();
  }

 private:
  LocalHub& hub_;
  int rank_;
};

LocalHub::LocalHub(int size) : boxes_(static_cast<size_t>(size)) {
  for (Box& b : boxes_) b.forgot.resize(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) endpoints_.push_back(std::make_unique<Endpoint>(*this, r));
}
LocalHub::~LocalHub() = default;

Transport& LocalHub::endpoint(int rank) { return *endpoints_.at(static_cast<size_t>(rank)); }

void LocalHub::kill(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  kill_locked(rank);
}

void LocalHub::kill_at_send(int rank, int n, int tag) {
  std::lock_guard<std::mutex> lock(mu_);
  boxes_.at(static_cast<size_t>(rank)).die_at_send = n;
  boxes_.at(static_cast<size_t>(rank)).die_tag = tag;
}

void LocalHub::kill_locked(int rank) {
  Box& b = boxes_.at(static_cast<size_t>(rank));
  b.dead = true;
  b.died = Clock::now();
  b.inbox.clear();
}

bool LocalHub::killed(int rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return boxes_.at(static_cast<size_t>(rank)).dead;
}

}  // namespace mugraph
