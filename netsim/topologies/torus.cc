#include "netsim/topologies/torus.h"

namespace bagua::netsim {

ParamSchema Torus::schema() {
  ParamSchema s;
  s.add_int("x", 1, "nodes along x", 1, 4096).required();
  s.add_int("y", 1, "nodes along y", 1, 4096).required();
  s.add_int("z", 1, "nodes along z (1: a 2D torus)", 1, 4096);
  return s;
}

Torus::Torus(const Params& params, const ClusterSpec& spec, const std::string& path) : Topology(spec) {
  size_ = {static_cast<int>(params.get_int("x")), static_cast<int>(params.get_int("y")),
           static_cast<int>(params.get_int("z"))};
  const int64_t nodes = int64_t{size_[0]} * size_[1] * size_[2];
  if (nodes > (int64_t{1} << 22))
    topology_error(path, "x * y * z", "be <= 2^22", std::to_string(nodes));
  if (spec.hosts > nodes)
    topology_error(path, "x * y * z", "hold the " + std::to_string(spec.hosts) + " hosts",
                   std::to_string(nodes));
  stride_ = {1, size_[0], size_[0] * size_[1]};
  const bool three_d = size_[2] > 1;
  auto node_name = [&](int n) {
    return "x" + std::to_string(n % size_[0]) + "y" + std::to_string((n / size_[0]) % size_[1]) +
           (three_d ? "z" + std::to_string(n / stride_[2]) : std::string());
  };
  nic_base_ = static_cast<int>(links().size());
  for (int h = 0; h < spec.hosts; ++h)
    add_cable("host" + std::to_string(h) + ".nic", "host" + std::to_string(h), node_name(h), spec.nic);
  hop_.assign(static_cast<size_t>(nodes) * 6, -1);
  static constexpr std::array<char, 3> kDimName = {'x', 'y', 'z'};
  for (int n = 0; n < static_cast<int>(nodes); ++n) {
    for (int dim = 0; dim < 3; ++dim) {
      const int s = size_[static_cast<size_t>(dim)];
      const int stride = stride_[static_cast<size_t>(dim)];
      if (s == 1) continue;
      const int at = (n / stride) % s;
      for (int dir = 0; dir < (s == 2 ? 1 : 2); ++dir) {
        const int next = dir == 0 ? (at + 1) % s : (at + s - 1) % s;
        const int neighbour = n + (next - at) * stride;
        hop_[static_cast<size_t>((n * 3 + dim) * 2 + dir)] =
            add_link(node_name(n) + "." + kDimName[static_cast<size_t>(dim)] + (dir == 0 ? "+" : "-"),
                     node_name(n), node_name(neighbour), spec.nic);
      }
    }
  }
}

void Torus::route_between(int src, int dst, Route& route) const {
  const int src_host = host_of(src);
  const int dst_host = host_of(dst);
  if (src_host == dst_host) return;
  route.links.push_back(nic_base_ + 2 * src_host);
  int node = src_host;  // hosts sit at the node of their index
  for (int dim = 0; dim < 3; ++dim) {
    const int s = size_[static_cast<size_t>(dim)];
    const int stride = stride_[static_cast<size_t>(dim)];
    const int from = (node / stride) % s, to = (dst_host / stride) % s;
    const int delta = ((to - from) % s + s) % s;
    const bool plus = delta <= s / 2;
    const int steps = plus ? delta : s - delta;
    int at = from;
    for (int step = 0; step < steps; ++step) {
      route.links.push_back(hop(node, dim, plus ? 0 : 1));
      const int next = plus ? (at + 1) % s : (at + s - 1) % s;
      node += (next - at) * stride;
      at = next;
    }
  }
  route.links.push_back(nic_base_ + 2 * dst_host + 1);
}

}  // namespace bagua::netsim
