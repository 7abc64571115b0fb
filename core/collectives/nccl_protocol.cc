// NCCL's protocols on the wire (core/collectives/nccl.h, "protocol"): how many bytes a message puts
// on the network, and the adapter that sends every message of a pipelined collective its step
// latency late (StepLatency) and as LL's or LL128's lines, each line carrying its data and a flag
// (NVIDIA/nccl v2.30.7-1, src/include/device.h and src/device/prims_ll.h, prims_ll128.h).
//
// Terms:
//   line     LL: 16 bytes, data1 (4), flag1 (4), data2 (4), flag2 (4) (ncclLLFifoLine); LL128: 128
//            bytes, 15 words of 8 data bytes and a last word holding the flag
//   warp     LL128 moves lines 16 at a time, 2048 bytes carrying 1920 (a warp's WireWordPerSlice)
//   flag     the number of the message on its (peer, tag) pair, from 1, as NCCL's flag is the step's
//            number: the receiver checks every line's, so a line that lost its place would be caught
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/collectives/nccl.h"
#include "core/ops.h"

namespace bagua::collectives {

std::string to_string(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kLL:
      return "ll";
    case NcclProtocol::kLL128:
      return "ll128";
    case NcclProtocol::kSimple:
      return "simple";
  }
  return "?";
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The lines of `protocol`: each `line` bytes carrying `data` of them, sent in whole units of `unit`
// wire bytes.
struct LineFormat {
  int64_t line = 0;
  int64_t data = 0;
  int64_t unit = 0;
  int64_t unit_data() const { return unit / line * data; }
};
LineFormat format_of(NcclProtocol protocol) {
  BAGUA_CHECK(protocol != NcclProtocol::kSimple, "Simple sends no lines");
  if (protocol == NcclProtocol::kLL) return {kLLLineBytes, kLLLineDataBytes, kLLLineBytes};
  return {kLL128LineBytes, kLL128LineDataBytes, kLL128WarpBytes};
}

// LL: the data bytes of line i go to offsets 0..3 and 8..11, its flag to 4..7 and 12..15.
// LL128: the data bytes to offsets 0..119, the flag to 120..127.
void pack(NcclProtocol protocol, std::span<const std::byte> data, std::span<std::byte> wire,
          uint64_t flag) {
  const LineFormat f = format_of(protocol);
  std::memset(wire.data(), 0, wire.size());
  const size_t lines = wire.size() / static_cast<size_t>(f.line);
  for (size_t i = 0; i < lines; ++i) {
    std::byte* line = wire.data() + i * static_cast<size_t>(f.line);
    const size_t first = i * static_cast<size_t>(f.data);
    const size_t n = first < data.size() ? std::min<size_t>(f.data, data.size() - first) : 0;
    if (protocol == NcclProtocol::kLL) {
      const auto flag32 = static_cast<uint32_t>(flag);
      std::memcpy(line, data.data() + first, std::min<size_t>(n, 4));
      if (n > 4) std::memcpy(line + 8, data.data() + first + 4, n - 4);
      std::memcpy(line + 4, &flag32, 4);
      std::memcpy(line + 12, &flag32, 4);
    } else {
      std::memcpy(line, data.data() + first, n);
      std::memcpy(line + f.data, &flag, 8);
    }
  }
}

void unpack(NcclProtocol protocol, std::span<const std::byte> wire, std::span<std::byte> data,
            uint64_t flag, int src) {
  const LineFormat f = format_of(protocol);
  // LL's flags are NCCL_LL_FLAG(step): 32 bits.
  const uint64_t expected = protocol == NcclProtocol::kLL ? static_cast<uint32_t>(flag) : flag;
  const size_t lines = wire.size() / static_cast<size_t>(f.line);
  for (size_t i = 0; i < lines; ++i) {
    const std::byte* line = wire.data() + i * static_cast<size_t>(f.line);
    const size_t first = i * static_cast<size_t>(f.data);
    const size_t n = first < data.size() ? std::min<size_t>(f.data, data.size() - first) : 0;
    uint64_t seen = 0;
    if (protocol == NcclProtocol::kLL) {
      uint32_t flag1 = 0;
      uint32_t flag2 = 0;
      std::memcpy(&flag1, line + 4, 4);
      std::memcpy(&flag2, line + 12, 4);
      BAGUA_CHECK(flag1 == flag2, "LL line " + std::to_string(i) + " from rank " + std::to_string(src) +
                                      ": flags " + std::to_string(flag1) + " and " +
                                      std::to_string(flag2));
      seen = flag1;
      std::memcpy(data.data() + first, line, std::min<size_t>(n, 4));
      if (n > 4) std::memcpy(data.data() + first + 4, line + 8, n - 4);
    } else {
      std::memcpy(&seen, line + f.data, 8);
      std::memcpy(data.data() + first, line, n);
    }
    BAGUA_CHECK(seen == expected, to_string(protocol) + " line " + std::to_string(i) + " from rank " +
                                      std::to_string(src) + ": flag " + std::to_string(seen) +
                                      ", expected " + std::to_string(expected));
  }
}

std::span<std::byte> bytes_of(const BufferView& v) {
  return {static_cast<std::byte*>(v.data()), static_cast<size_t>(v.bytes().count())};
}

// `view`'s bytes on the host: the view itself, or (device memory) a host copy of it.
Buffer host_copy(const BufferView& view) {
  Buffer copy_of = Buffer::host(view.dtype(), view.count());
  copy(copy_of, view);
  return copy_of;
}

class LineSend final : public Request {
 public:
  LineSend(Buffer wire, RequestPtr inner) : wire_(std::move(wire)), inner_(std::move(inner)) {}
  bool test() override { return inner_->test(); }
  void wait() override { inner_->wait(); }

 private:
  Buffer wire_;  // alive until the send completes
  RequestPtr inner_;
};

class LineRecv final : public Request {
 public:
  LineRecv(NcclProtocol protocol, Buffer wire, RequestPtr inner, BufferView into, uint64_t flag,
           int src)
      : protocol_(protocol),
        wire_(std::move(wire)),
        inner_(std::move(inner)),
        into_(into),
        flag_(flag),
        src_(src) {}
  bool test() override {
    if (!inner_->test()) return false;
    finish();
    return true;
  }
  void wait() override {
    inner_->wait();
    finish();
  }

 private:
  // Once the lines have landed: their data into `into_` (nothing for a meta buffer).
  void finish() {
    if (done_) return;
    done_ = true;
    if (into_.is_meta() || into_.count() == 0) return;
    if (into_.is_host()) {
      unpack(protocol_, bytes_of(wire_.view()), bytes_of(into_), flag_, src_);
      return;
    }
    const Buffer wire = host_copy(wire_.view());
    const Buffer data = Buffer::host(into_.dtype(), into_.count());
    unpack(protocol_, bytes_of(wire.view()), bytes_of(data.view()), flag_, src_);
    copy(into_, data);
  }
  NcclProtocol protocol_;
  Buffer wire_;
  RequestPtr inner_;
  BufferView into_;
  uint64_t flag_;
  int src_;
  bool done_ = false;
};

// The adapter: every message `step_latency_` late where `delayed_` offers it, and for LL and LL128 as
// `protocol_`'s lines, over `inner_`.
class ProtocolTransport final : public Transport {
 public:
  ProtocolTransport(Transport& inner, NcclProtocol protocol, StepLatency step_latency)
      : inner_(inner),
        protocol_(protocol),
        step_latency_(step_latency),
        delayed_(dynamic_cast<DelayedSend*>(&inner)) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int host_of(int rank) const override { return inner_.host_of(rank); }
  std::optional<LinkHint> link_hint() const override { return inner_.link_hint(); }
  std::unique_ptr<Transport> make_subgroup(std::span<const int> /*ranks*/) override {
    BAGUA_CHECK(false, "the " + to_string(protocol_) + " adapter of one collective has no subgroups");
    return nullptr;
  }

  RequestPtr isend(const BufferView& data, int dst, Tag tag) override {
    if (protocol_ == NcclProtocol::kSimple) return send(data, dst, tag);
    const uint64_t flag = ++sent_[{dst, tag}];
    Buffer wire = wire_buffer(data);
    if (!data.is_meta() && data.count() > 0) {
      if (data.is_host() && wire.view().is_host()) {
        pack(protocol_, bytes_of(data), bytes_of(wire.view()), flag);
      } else {
        const Buffer source = host_copy(data);
        const Buffer lines = Buffer::host(DType::kU8, wire.count());
        pack(protocol_, bytes_of(source.view()), bytes_of(lines.view()), flag);
        copy(wire, lines);
      }
    }
    RequestPtr inner = send(wire.view(), dst, tag);
    return std::make_unique<LineSend>(std::move(wire), std::move(inner));
  }

  RequestPtr irecv(const BufferView& data, int src, Tag tag) override {
    if (protocol_ == NcclProtocol::kSimple) return inner_.irecv(data, src, tag);
    const uint64_t flag = ++received_[{src, tag}];
    Buffer wire = wire_buffer(data);
    RequestPtr inner = inner_.irecv(wire.view(), src, tag);
    return std::make_unique<LineRecv>(protocol_, std::move(wire), std::move(inner), data, flag, src);
  }

 private:
  // One message to `dst`, its step latency late where the transport can delay it.
  RequestPtr send(const BufferView& data, int dst, Tag tag) {
    const Time delay =
        inner_.host_of(dst) == inner_.host_of(rank()) ? step_latency_.intra : step_latency_.inter;
    if (delayed_ == nullptr || delay == Time::zero()) return inner_.isend(data, dst, tag);
    return delayed_->isend_after(delay, data, dst, tag);
  }
  Buffer wire_buffer(const BufferView& data) const {
    return Buffer::like(data, DType::kU8,
                        static_cast<size_t>(wire_bytes(protocol_, data.bytes()).count()));
  }
  Transport& inner_;
  NcclProtocol protocol_;
  StepLatency step_latency_;
  DelayedSend* delayed_;
  std::map<std::pair<int, Tag>, uint64_t> sent_;      // messages so far per (peer, tag)
  std::map<std::pair<int, Tag>, uint64_t> received_;  // receives posted so far per (peer, tag)
};

}  // namespace

Bytes wire_bytes(NcclProtocol protocol, Bytes payload) {
  BAGUA_CHECK(payload.count() >= 0, "wire_bytes of " + std::to_string(payload.count()) + " B");
  if (protocol == NcclProtocol::kSimple) return payload;
  const LineFormat f = format_of(protocol);
  return Bytes(ceil_div(payload.count(), f.unit_data()) * f.unit);
}

Transport& protocol_transport(Transport& transport, const PipelineOptions& options,
                              std::unique_ptr<Transport>& adapter) {
  const bool delays =
      options.step_latency != StepLatency{} && dynamic_cast<DelayedSend*>(&transport) != nullptr;
  if (options.protocol == NcclProtocol::kSimple && !delays) return transport;
  adapter = std::make_unique<ProtocolTransport>(transport, options.protocol,
                                                delays ? options.step_latency : StepLatency{});
  return *adapter;
}

}  // namespace bagua::collectives
