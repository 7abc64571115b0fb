// The per-rank Transport: everything a rank's algorithm code may do with the network.
//
// Terms:
//   rank, size   this rank's index in its group and the group's size
//   host         the physical host a rank runs on (ranks on one host share fast intra-host links)
//   tag          names one operation (a collective on one bucket, say); messages between the same
//                pair of ranks, in the same group, with the same tag are matched in the order they
//                were posted
//   request      the handle of a non-blocking send or receive, with SimGrid's life cycle:
//                start (isend/irecv), test, wait; a blocking call is start + wait
//   subgroup     a Transport over a subset of ranks, numbered by position in the list given
//
// A send of a meta buffer moves no data but costs its full size. A receive must name exactly as many
// bytes as the matching send carries. Implementations are safe to call from two streams of one rank
// (the compute stream and the communication stream) at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/units.h"

namespace bagua {

using Tag = uint32_t;

class Request {
 public:
  virtual ~Request() = default;
  virtual bool test() = 0;  // has the operation completed? never blocks
  virtual void wait() = 0;  // block the calling stream until it has
};
using RequestPtr = std::unique_ptr<Request>;

// The nominal links of a group's cluster, for cost models that must know them before running (NCCL's
// tuning model, core/collectives/nccl.h): one rank's link to another rank on its host, and a host's
// network link; and the two facts of its devices that NCCL's tuner reads (NcclTopology). What the
// cluster is built with, not what a measurement found.
struct LinkHint {
  Bandwidth intra_host;
  Time intra_host_latency;
  Bandwidth inter_host;
  Time inter_host_latency;
  // The devices' CUDA compute capability, major x 10 + minor (7.0: 70), as NCCL's minCompCap.
  int compute_capability = 70;
  // Whether each device reaches its NIC through PCIe switches only (NCCL's PATH_PIX or PATH_PXB,
  // src/include/graph.h), not through a CPU's host bridge (PATH_PHB, PATH_SYS).
  bool nic_near_device = true;
};

void wait_all(std::span<RequestPtr> requests);

class Transport;

// One stream of Transport::concurrently: `body` runs with a transport of matching space `space`
// (streams of equal spaces share one; space 0 is the transport itself).
struct ConcurrentStream {
  int space = 0;
  std::function<void(Transport&)> body;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Host index of `rank` of this group (equal hosts share intra-host links).
  virtual int host_of(int rank) const = 0;

  virtual RequestPtr isend(const BufferView& data, int dst, Tag tag) = 0;
  virtual RequestPtr irecv(const BufferView& data, int src, Tag tag) = 0;

  // A transport over `ranks` (this group's numbering, containing this rank, no repeats); this rank's
  // new number is its position in the list. Every member calls it with the same list; non-members do
  // not. The backend makes it (make_subgroup); it reports this group's link_hint.
  std::unique_ptr<Transport> subgroup(std::span<const int> ranks);

  // The backend's own allreduce (MPI_Allreduce, ncclAllReduce), in place, offered as a baseline.
  // Returns false when the backend has none; collectives then run the reference ring instead.
  virtual bool native_allreduce(const BufferView& data, ReduceOp op) { return false; }

  // The nominal links of this group's cluster where the backend knows them: the simulator's own; on a
  // real runtime those set_link_hint gave (World::set_link_hint, from the run's config), which
  // subgroup() hands on. Empty otherwise, and cost models fall back to their own defaults.
  virtual std::optional<LinkHint> link_hint() const { return link_hint_; }
  void set_link_hint(std::optional<LinkHint> hint) { link_hint_ = hint; }

  // Runs `streams` as streams of this rank, as NCCL runs its channels, each on its own thread block
  // with its own connections; returns when every one has returned, rethrowing the first exception.
  // Each body gets a transport of this group and numbering whose messages match only those of the
  // same `space` (>= 0; space 0 is this transport). A backend that can runs them concurrently (the
  // simulator: a fiber each, SimTransport); the default runs them one after another, in order, with
  // this transport for every space. Bodies must be right both ways: every rank lists the same spaces
  // in the same order, and no stream waits for a later one of its rank.
  virtual void concurrently(std::span<const ConcurrentStream> streams);

  void send(const BufferView& data, int dst, Tag tag) { isend(data, dst, tag)->wait(); }
  void recv(const BufferView& data, int src, Tag tag) { irecv(data, src, tag)->wait(); }
  // Send to `dst` and receive from `src` concurrently (the step of every ring algorithm): irecv, then
  // isend, then wait for the send, then for the receive. A backend may do the same without the two
  // requests.
  virtual void sendrecv(const BufferView& out, int dst, const BufferView& in, int src, Tag tag);

 protected:
  // The backend's transport over `ranks`, as subgroup() describes it.
  virtual std::unique_ptr<Transport> make_subgroup(std::span<const int> ranks) = 0;

 private:
  std::optional<LinkHint> link_hint_;
};

// Ranks of this group grouped by host, in host order, and this rank's host peers.
struct HostLayout {
  std::vector<std::vector<int>> hosts;  // hosts[h] = ranks on host h, ascending
  int my_host = 0;                      // index into hosts
  int local_rank = 0;                   // position of this rank within hosts[my_host]
  bool uniform() const;                 // every host has the same number of ranks
};
HostLayout host_layout(const Transport& t);

// Checks the list given to `t.subgroup` (every rank within t's group, none twice, t.rank() among them)
// and returns t.rank()'s position in it, its number in the subgroup. `who` starts the messages of the
// first two checks (a backend's "rank 3: ", say).
int subgroup_position(const Transport& t, std::span<const int> ranks, const std::string& who = "");

// The id of a subgroup, derived from the parent's id and the members' world ranks (FNV-1a), so that
// every member computes the same id without talking to the others. Never 0, the world group's id.
uint64_t subgroup_id(uint64_t parent, std::span<const int> world_members);

}  // namespace bagua
