#include "core/transport.h"

#include <map>

namespace bagua {

void wait_all(std::span<RequestPtr> requests) {
  for (RequestPtr& r : requests)
    if (r) r->wait();
}

void Transport::sendrecv(const BufferView& out, int dst, const BufferView& in, int src, Tag tag) {
  RequestPtr r = irecv(in, src, tag);
  RequestPtr s = isend(out, dst, tag);
  s->wait();
  r->wait();
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

}  // namespace bagua
