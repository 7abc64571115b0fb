// NCCL's pipelined ring (src/device/all_reduce.h runRing, reduce_scatter.h, all_gather.h,
// broadcast.h, reduce.h): channels, chunks, slices, slots and protocols as core/collectives/nccl.h
// defines them.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/collectives/nccl.h"
#include "core/collectives/nccl_flow.h"
#include "core/operation.h"
#include "core/ops.h"

namespace bagua::collectives {

int PipelineOptions::slices_in_flight() const {
  return std::max(1, slots / slice_steps);
}

size_t PipelineOptions::slice_elements(size_t element_bytes) const {
  const int64_t bytes = step.count() * slice_steps;
  return std::max<size_t>(1, static_cast<size_t>(bytes) / std::max<size_t>(1, element_bytes));
}

void validate(const PipelineOptions& options) {
  auto fail = [](const std::string& field, int64_t value, const std::string& expected) {
    throw ConfigError("pipeline." + field + " must be " + expected + ", got " + std::to_string(value));
  };
  if (options.channels < 1) fail("channels", options.channels, ">= 1");
  if (options.step.count() <= 0) fail("step", options.step.count(), "> 0 bytes");
  if (options.slots < 1) fail("slots", options.slots, ">= 1");
  if (options.slice_steps < 1 || options.slice_steps > options.slots)
    fail("slice_steps", options.slice_steps, "in [1, slots = " + std::to_string(options.slots) + "]");
}

PipelineOptions broadcast_pipeline(int channels) {
  PipelineOptions options;
  options.channels = channels;
  options.slice_steps = kBroadcastSliceSteps;
  return options;
}

namespace {

// Slices of a chunk of `count` elements, `slice` elements each (the last one shorter).
size_t slice_count(size_t count, size_t slice) {
  return (count + slice - 1) / slice;
}
BufferView slice_of(const BufferView& chunk, size_t slice, size_t j) {
  const size_t offset = j * slice;
  return chunk.slice(offset, std::min(slice, chunk.count() - offset));
}

// The sends of one channel to one peer: at most `slices` in flight. Sending one more first waits for
// the oldest, whose slot it reuses.
class SlotWindow {
 public:
  explicit SlotWindow(int slices) : slices_(static_cast<size_t>(slices)) {}
  // Sends `slice`; returns its number among this window's sends (0, 1, ...).
  int64_t send(Transport& transport, const BufferView& slice, int dst, Tag tag) {
    if (in_flight_.size() == slices_) pop();
    in_flight_.push_back(transport.isend(slice, dst, tag));
    return posted_++;
  }
  // Waits until send number `sent` (and every earlier one) has completed.
  void wait_through(int64_t sent) {
    while (completed_ <= sent && !in_flight_.empty())
      pop();
  }
  void drain() { wait_through(posted_ - 1); }

 private:
  void pop() {
    in_flight_.front()->wait();
    in_flight_.erase(in_flight_.begin());
    ++completed_;
  }
  size_t slices_;
  std::vector<RequestPtr> in_flight_;
  int64_t posted_ = 0;
  int64_t completed_ = 0;
};

std::vector<SlotWindow> make_windows(int channels, const PipelineOptions& options) {
  std::vector<SlotWindow> windows;
  for (int channel = 0; channel < channels; ++channel)
    windows.emplace_back(options.slices_in_flight());
  return windows;
}

// One step of a ring collective: the chunk a rank sends to its right and the chunk it receives from
// its left (indices into its channel's chunks), and whether the received chunk is reduced into the
// rank's own (else it is received in place).
struct RingStep {
  int send_chunk = 0;
  int recv_chunk = 0;
  bool reduce = false;
};

// How a ring's chunks lie in its buffer (nccl.h, "The pipelined ring").
enum class Layout : uint8_t {
  kChannelMajor,  // channel c: part c of the buffer, cut into P chunks (allreduce)
  kRankMajor,     // chunk k of channel c: part c of block k, the buffer's chunk k (reduce-scatter,
                  // allgather)
};

// chunk(channel, k): chunk k of `channel`'s part, worked out when asked for (a table of every chunk
// would hold channels x P views per rank and call: O(P^2) for the world while every rank is inside
// one collective).
class RingChunks {
 public:
  RingChunks(const BufferView& data, int ranks, int channels, Layout layout)
      : data_(data), ranks_(ranks), channels_(channels), layout_(layout) {
    if (layout == Layout::kChannelMajor) {
      const Chunking parts(data, channels);
      for (int channel = 0; channel < channels; ++channel)
        parts_.push_back(parts.chunk(channel));
    }
  }
  BufferView chunk(int channel, int k) const {
    if (layout_ == Layout::kChannelMajor)
      return Chunking(parts_[static_cast<size_t>(channel)], ranks_).chunk(k);
    return Chunking(Chunking(data_, ranks_).chunk(k), channels_).chunk(channel);
  }

 private:
  BufferView data_;
  int ranks_;
  int channels_;
  Layout layout_;
  std::vector<BufferView> parts_;  // kChannelMajor: channel c's part of the buffer
};

// Runs `steps` of a ring over every channel. In step t every rank sends its send_chunk slice by slice
// and receives the recv_chunk; from step 1 on, slice j of the send_chunk is the slice j the rank
// received (and reduced) in step t - 1, so the rank waits for that receive just before sending it:
// a slice is forwarded as soon as it is there. Receives of step t are posted while step t - 1's are
// consumed; those of reduced steps land in `incoming`, two chunks per channel (steps alternate).
// A chunk received in place that the rank sent in an earlier step (the allreduce's allgather
// overwrites what its reduce-scatter sent) is received only once that send has completed.
void run_ring(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
              const PipelineOptions& options, const std::vector<RingStep>& steps, Layout layout) {
  const int ranks = transport.size();
  const int rank = transport.rank();
  const int right = mod(rank + 1, ranks);
  const int left = mod(rank - 1, ranks);
  const int channels = options.channels;
  const size_t slice = options.slice_elements(size_of(data.dtype()));
  const RingChunks chunks(data, ranks, channels, layout);
  // The largest chunk: both layouts cut with chunk_range, whose first pieces are the larger, so it is
  // channel 0's chunk 0.
  const size_t max_chunk = chunks.chunk(0, 0).count();
  const Buffer incoming = Buffer::like(data, data.dtype(), 2 * max_chunk * channels);
  auto incoming_slice = [&](int channel, size_t t, size_t j, size_t count) {
    const size_t base = (static_cast<size_t>(channel) * 2 + t % 2) * max_chunk + j * slice;
    return incoming.view().slice(base, count);
  };
  std::vector<SlotWindow> windows = make_windows(channels, options);
  // received[(channel x 2 + t % 2) x max_slices + j]: the receive of slice j in step t.
  const size_t max_slices = slice_count(max_chunk, slice);
  std::vector<RequestPtr> received(static_cast<size_t>(channels) * 2 * max_slices);
  auto receive_of = [&](int channel, size_t t, size_t j) -> RequestPtr& {
    return received[(static_cast<size_t>(channel) * 2 + t % 2) * max_slices + j];
  };
  // sent_of(channel, chunk, j): the window's number of the last send of slice j of that chunk, -1
  // none; one flat table (not a vector per channel and chunk: ranks x channels allocations per call).
  std::vector<int64_t> sent(static_cast<size_t>(channels) * static_cast<size_t>(ranks) * max_slices,
                            -1);
  auto sent_of = [&](int channel, int chunk, size_t j) -> int64_t& {
    const size_t row = static_cast<size_t>(channel) * static_cast<size_t>(ranks);
    return sent[(row + static_cast<size_t>(chunk)) * max_slices + j];
  };

  // Waits for slice j of step t's receive and reduces it into the rank's chunk.
  auto consume = [&](int channel, size_t t, size_t j) {
    RequestPtr& r = receive_of(channel, t, j);
    if (!r) return;
    r->wait();
    r.reset();
    const RingStep& step = steps[t];
    if (!step.reduce) return;
    const BufferView chunk = slice_of(chunks.chunk(channel, step.recv_chunk), slice, j);
    bagua::reduce(chunk, incoming_slice(channel, t, j, chunk.count()), op);
  };

  for (size_t t = 0; t < steps.size(); ++t) {
    const RingStep& step = steps[t];
    const size_t slices = std::max(slice_count(max_chunk, slice), size_t{1});
    for (size_t j = 0; j < slices; ++j) {
      for (int channel = 0; channel < channels; ++channel) {
        const BufferView recv_chunk = chunks.chunk(channel, step.recv_chunk);
        if (j * slice < recv_chunk.count()) {
          const BufferView into = slice_of(recv_chunk, slice, j);
          if (!step.reduce) windows[channel].wait_through(sent_of(channel, step.recv_chunk, j));
          receive_of(channel, t, j) = transport.irecv(
              step.reduce ? incoming_slice(channel, t, j, into.count()) : into, left, tag);
        }
        const BufferView send_chunk = chunks.chunk(channel, step.send_chunk);
        if (j * slice < send_chunk.count()) {
          if (t > 0) consume(channel, t - 1, j);
          sent_of(channel, step.send_chunk, j) =
              windows[channel].send(transport, slice_of(send_chunk, slice, j), right, tag);
        }
      }
    }
  }
  const size_t last = steps.size() - 1;
  for (size_t j = 0; j < max_slices; ++j)
    for (int channel = 0; channel < channels; ++channel)
      consume(channel, last, j);
  for (SlotWindow& w : windows)
    w.drain();
}

// The reduce-scatter's steps (ring.cc's): in step s rank sends chunk rank - s - 1 and reduces chunk
// rank - s - 2 into its own; the allgather's: it sends chunk rank - s and receives chunk rank - s - 1.
void add_reduce_scatter_steps(std::vector<RingStep>& steps, int rank, int ranks) {
  for (int s = 0; s < ranks - 1; ++s)
    steps.push_back({mod(rank - s - 1, ranks), mod(rank - s - 2, ranks), true});
}
void add_allgather_steps(std::vector<RingStep>& steps, int rank, int ranks) {
  for (int s = 0; s < ranks - 1; ++s)
    steps.push_back({mod(rank - s, ranks), mod(rank - s - 1, ranks), false});
}

bool nothing_to_do(const Transport& transport, const BufferView& data, const PipelineOptions& options) {
  validate(options);
  return transport.size() == 1 || data.count() == 0;
}

}  // namespace

void pipelined_reduce_scatter(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                              const PipelineOptions& options) {
  const OperationScope scope("pipelined reduce-scatter");
  if (nothing_to_do(transport, data, options)) return;
  if (FlowCapable* flow = flow_granularity(transport, data))
    return flow_reduce_scatter(*flow, transport, data, tag, options);
  std::unique_ptr<Transport> lines;
  Transport& wire = protocol_transport(transport, options, lines);
  std::vector<RingStep> steps;
  add_reduce_scatter_steps(steps, transport.rank(), transport.size());
  run_ring(wire, data, op, tag, options, steps, Layout::kRankMajor);
}

void pipelined_allgather(Transport& transport, const BufferView& data, Tag tag,
                         const PipelineOptions& options) {
  const OperationScope scope("pipelined allgather");
  if (nothing_to_do(transport, data, options)) return;
  if (FlowCapable* flow = flow_granularity(transport, data))
    return flow_allgather(*flow, transport, data, tag, options);
  std::unique_ptr<Transport> lines;
  Transport& wire = protocol_transport(transport, options, lines);
  std::vector<RingStep> steps;
  add_allgather_steps(steps, transport.rank(), transport.size());
  run_ring(wire, data, ReduceOp::kSum, tag, options, steps, Layout::kRankMajor);
}

void pipelined_ring_allreduce(Transport& transport, const BufferView& data, ReduceOp op, Tag tag,
                              const PipelineOptions& options) {
  // The reduce-scatter's last step completes chunk rank, which the allgather's first step sends: the
  // 2 (ranks - 1) steps form one pipeline, as in runRing.
  const OperationScope scope("pipelined ring allreduce");
  if (nothing_to_do(transport, data, options)) return;
  if (FlowCapable* flow = flow_granularity(transport, data))
    return flow_ring_allreduce(*flow, transport, data, tag, options);
  std::unique_ptr<Transport> lines;
  Transport& wire = protocol_transport(transport, options, lines);
  std::vector<RingStep> steps;
  add_reduce_scatter_steps(steps, transport.rank(), transport.size());
  add_allgather_steps(steps, transport.rank(), transport.size());
  run_ring(wire, data, op, tag, options, steps, Layout::kChannelMajor);
}

void pipelined_broadcast(Transport& transport, const BufferView& data, int root, Tag tag,
                         const PipelineOptions& options) {
  // The ranks stand in a ring from the root: `position` p = rank - root (mod ranks). Each channel's
  // part moves slice by slice: the root sends it to its right, a rank at 0 < p < ranks - 1 forwards
  // each slice as soon as it has received it, the rank at p = ranks - 1 only receives.
  const OperationScope scope("pipelined broadcast");
  const int ranks = transport.size();
  BAGUA_CHECK(root >= 0 && root < ranks, "pipelined_broadcast: root " + std::to_string(root));
  if (nothing_to_do(transport, data, options)) return;
  if (FlowCapable* flow = flow_granularity(transport, data))
    return flow_broadcast(*flow, transport, data, root, tag, options);
  std::unique_ptr<Transport> lines;
  Transport& wire = protocol_transport(transport, options, lines);
  const int position = mod(transport.rank() - root, ranks);
  const int right = mod(transport.rank() + 1, ranks);
  const int left = mod(transport.rank() - 1, ranks);
  const size_t slice = options.slice_elements(size_of(data.dtype()));
  const Chunking parts(data, options.channels);
  std::vector<SlotWindow> windows = make_windows(options.channels, options);
  const size_t slices = slice_count(parts.max_count(), slice);
  for (size_t j = 0; j < slices; ++j) {
    for (int channel = 0; channel < options.channels; ++channel) {
      const BufferView part = parts.chunk(channel);
      if (j * slice >= part.count()) continue;
      const BufferView piece = slice_of(part, slice, j);
      if (position > 0) wire.recv(piece, left, tag);
      if (position < ranks - 1) windows[channel].send(wire, piece, right, tag);
    }
  }
  for (SlotWindow& w : windows)
    w.drain();
}

void pipelined_reduce(Transport& transport, const BufferView& data, int root, ReduceOp op, Tag tag,
                      const PipelineOptions& options) {
  // The ranks stand in a ring ending at the root: `position` p = rank - root - 1 (mod ranks). The rank
  // at p = 0 sends each slice of each channel's part to its right; a rank at 0 < p < ranks - 1
  // receives the slice into `incoming`, reduces it into its own and forwards the sum; the root
  // (p = ranks - 1) receives and reduces.
  const OperationScope scope("pipelined reduce");
  const int ranks = transport.size();
  BAGUA_CHECK(root >= 0 && root < ranks, "pipelined_reduce: root " + std::to_string(root));
  if (nothing_to_do(transport, data, options)) return;
  if (FlowCapable* flow = flow_granularity(transport, data))
    return flow_reduce(*flow, transport, data, root, tag, options);
  std::unique_ptr<Transport> lines;
  Transport& wire = protocol_transport(transport, options, lines);
  const int position = mod(transport.rank() - root - 1, ranks);
  const int right = mod(transport.rank() + 1, ranks);
  const int left = mod(transport.rank() - 1, ranks);
  const size_t slice = options.slice_elements(size_of(data.dtype()));
  const Chunking parts(data, options.channels);
  std::vector<SlotWindow> windows = make_windows(options.channels, options);
  const Buffer incoming = Buffer::like(data, data.dtype(), std::min(slice, parts.max_count()));
  const size_t slices = slice_count(parts.max_count(), slice);
  for (size_t j = 0; j < slices; ++j) {
    for (int channel = 0; channel < options.channels; ++channel) {
      const BufferView part = parts.chunk(channel);
      if (j * slice >= part.count()) continue;
      const BufferView piece = slice_of(part, slice, j);
      if (position > 0) {
        const BufferView received = incoming.view().slice(0, piece.count());
        wire.recv(received, left, tag);
        bagua::reduce(piece, received, op);
      }
      if (position < ranks - 1) windows[channel].send(wire, piece, right, tag);
    }
  }
  for (SlotWindow& w : windows)
    w.drain();
}

}  // namespace bagua::collectives
