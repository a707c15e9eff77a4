// libmugraph_mpi.so: the few MPI calls mugraph's transport needs (support/transport.h), as
// plain C functions that mugraph loads with dlopen only when it was launched as several MPI
// ranks, so that mugraph itself never links MPI. Built when CMake finds MPI.
//
// Sends never wait (see below); MPI_Finalize does wait for every rank, so a job that lost one ends
// with mugraph_mpi_abort instead.
//
// Threading: MPI is initialized with MPI_THREAD_SERIALIZED; the caller (MpiTransport) makes
// one call at a time, under its mutex. Sends are non-blocking (MPI_Isend of a copy kept until
// the send completes), so a slow or dead peer never blocks a send.
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <list>
#include <cstring>

namespace {

// A send in flight: its buffer (owned; freed when the send completed, leaked when given up,
// since MPI may still read it) and request.
struct PendingSend {
  int dest;
  char* data;
  MPI_Request request;
};
std::list<PendingSend> g_pending;

}  // namespace

extern "C" {

// Joins the job: MPI_Init_thread (SERIALIZED), errors returned rather than fatal. 0 on success,
// else non-zero with `why` filled.
// `local_size`: the ranks on this rank's node (they share its cores).
int mugraph_mpi_init(int* argc, char*** argv, int* rank, int* size, int* local_size, char* why,
                     int why_len) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    std::snprintf(why, static_cast<size_t>(why_len), "MPI_Init_thread failed");
    return 1;
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    std::snprintf(why, static_cast<size_t>(why_len),
                  "this MPI provides thread level %d, below MPI_THREAD_SERIALIZED", provided);
    return 1;
  }
  // A failed call to a dead peer returns an error instead of aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  MPI_Comm node;
  *local_size = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_size(node, local_size);
    MPI_Comm_free(&node);
  }
  return 0;
}

// Sends a copy of data[0..len) to `dest` without waiting. 0 on success.
int mugraph_mpi_isend(int dest, int tag, const char* data, long long len) {
  if (len < 0 || len > INT_MAX) return 1;
  char* copy = new char[static_cast<size_t>(len) + 1];
  std::memcpy(copy, data, static_cast<size_t>(len));
  g_pending.push_back({dest, copy, MPI_REQUEST_NULL});
  PendingSend& p = g_pending.back();
  if (MPI_Isend(p.data, static_cast<int>(len), MPI_CHAR, dest, tag, MPI_COMM_WORLD,
                &p.request) != MPI_SUCCESS) {
    delete[] copy;
    g_pending.pop_back();
    return 1;
  }
  return 0;
}

// 1 when a message with `tag` (-1: any) waits, with its source, tag and length; else 0.
int mugraph_mpi_iprobe(int tag, int* source, int* got_tag, long long* len) {
  int flag = 0;
  MPI_Status st;
  if (MPI_Iprobe(MPI_ANY_SOURCE, tag < 0 ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &flag, &st) !=
          MPI_SUCCESS ||
      !flag)
    return 0;
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  *source = st.MPI_SOURCE;
  *got_tag = st.MPI_TAG;
  *len = count;
  return 1;
}

// Receives the message an iprobe just reported. 0 on success.
int mugraph_mpi_recv(int source, int tag, char* buf, long long len) {
  return MPI_Recv(buf, static_cast<int>(len), MPI_CHAR, source, tag, MPI_COMM_WORLD,
                  MPI_STATUS_IGNORE) == MPI_SUCCESS
             ? 0
             : 1;
}

// Frees the sends that completed.
void mugraph_mpi_progress() {
  for (auto it = g_pending.begin(); it != g_pending.end();) {
    int done = 0;
    if (MPI_Test(&it->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) {
      delete[] it->data;
      it = g_pending.erase(it);
    } else
      ++it;
  }
}

// Gives up the sends still pending to a peer taken for dead (they would never complete).
void mugraph_mpi_drop_peer(int dest) {
  for (auto it = g_pending.begin(); it != g_pending.end();) {
    if (it->dest != dest) {
      ++it;
      continue;
    }
    MPI_Request_free(&it->request);  // the buffer is leaked: a dead peer's last few messages
    it = g_pending.erase(it);
  }
}

// Ends the whole job with exit code `code` (MPI_Abort): the way out once a rank has died, since
// Open MPI's MPI_Finalize waits for every rank, the dead one included. Does not return.
void mugraph_mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

// Leaves the job. Sends still pending (to peers that never received them) are released first.
int mugraph_mpi_finalize() {
  mugraph_mpi_progress();
  for (PendingSend& p : g_pending) MPI_Request_free(&p.request);  // buffers leaked, as above
  g_pending.clear();
  return MPI_Finalize() == MPI_SUCCESS ? 0 : 1;
}

}  // extern "C"
