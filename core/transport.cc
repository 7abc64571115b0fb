#include "core/transport.h"

#include <map>
#include <vector>

#include "core/check.h"

namespace bagua {

void wait_all(std::span<RequestPtr> requests) {
  for (RequestPtr& r : requests)
    if (r) r->wait();
}

std::unique_ptr<Transport> Transport::subgroup(std::span<const int> ranks) {
  std::unique_ptr<Transport> sub = make_subgroup(ranks);
  sub->set_link_hint(link_hint());
  return sub;
}

void Transport::sendrecv(const BufferView& out, int dst, const BufferView& in, int src, Tag tag) {
  RequestPtr r = irecv(in, src, tag);
  RequestPtr s = isend(out, dst, tag);
  s->wait();
  r->wait();
}

void Transport::concurrently(std::span<const ConcurrentStream> streams) {
  for (const ConcurrentStream& stream : streams) {
    BAGUA_CHECK(stream.space >= 0, "concurrently: space " + std::to_string(stream.space));
    stream.body(*this);
  }
}

bool HostLayout::uniform() const {
  for (const auto& h : hosts)
    if (h.size() != hosts.front().size()) return false;
  return true;
}

HostLayout host_layout(const Transport& t) {
  std::map<int, std::vector<int>> by_host;
  for (int r = 0; r < t.size(); ++r)
    by_host[t.host_of(r)].push_back(r);
  HostLayout layout;
  for (auto& [host, ranks] : by_host) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] == t.rank()) {
        layout.my_host = static_cast<int>(layout.hosts.size());
        layout.local_rank = static_cast<int>(i);
      }
    }
    layout.hosts.push_back(std::move(ranks));
  }
  return layout;
}

int subgroup_position(const Transport& t, std::span<const int> ranks, const std::string& who) {
  // One bit per rank of the group, not a std::set: every rank of a P-rank simulation may build a
  // subgroup of all P (a results gather), P^2 checks in all. Bits: with a byte per rank (4 KiB at
  // 4096 ranks) the peak memory of a 4096-rank VGG16 run grew by 16 MiB, 4 KiB per rank (the freed
  // buffers were not reused); P / 8 bytes left it as it was.
  std::vector<bool> seen(static_cast<size_t>(t.size()), false);
  int position = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    BAGUA_CHECK(r >= 0 && r < t.size(), who + "subgroup: rank " + std::to_string(r) +
                                            " outside a group of " + std::to_string(t.size()));
    BAGUA_CHECK(!seen[static_cast<size_t>(r)],
                who + "subgroup lists rank " + std::to_string(r) + " twice");
    seen[static_cast<size_t>(r)] = true;
    if (r == t.rank()) position = static_cast<int>(i);
  }
  BAGUA_CHECK(position >= 0, "rank " + std::to_string(t.rank()) + " creates a subgroup it is not in");
  return position;
}

uint64_t subgroup_id(uint64_t parent, std::span<const int> world_members) {
  uint64_t h = 1469598103934665603ull ^ parent;  // FNV-1a 64-bit offset basis
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;  // FNV-1a 64-bit prime
    }
  };
  mix(world_members.size());
  for (int m : world_members)
    mix(static_cast<uint64_t>(static_cast<uint32_t>(m)));
  if (h == 0) h = 1;  // 0 is the world group
  return h;
}

}  // namespace bagua
