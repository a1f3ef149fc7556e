// Layouts as values (construction, printing, equality) and the index arithmetic of LayoutMap.
#include "compiler/ir/Layout.h"

#include "compiler/support/Error.h"

#include <algorithm>
#include <bit>
#include <string_view>

namespace tritium::ir {

Layout Layout::blocked(std::vector<int> spt, std::vector<int> tpw, std::vector<int> wpc,
                       std::vector<int> order) {
  Layout l;
  l.kind_ = Kind::Blocked;
  if (order.empty())
    for (int d = int(spt.size()) - 1; d >= 0; --d)
      order.push_back(d);
  l.spt_ = std::move(spt);
  l.tpw_ = std::move(tpw);
  l.wpc_ = std::move(wpc);
  l.order_ = std::move(order);
  return l;
}

Layout Layout::slice(const Layout &parent, int dim) {
  if (dim < 0 || dim >= parent.rank())
    internalError("slice of dimension " + std::to_string(dim) + " of " + parent.str());
  Layout l;
  l.kind_ = Kind::Slice;
  l.dim_ = dim;
  l.parent_ = std::make_shared<const Layout>(parent);
  return l;
}

int Layout::rank() const {
  return isBlocked() ? int(spt_.size()) : parent_->rank() - 1;
}

const Layout &Layout::root() const { return isBlocked() ? *this : parent_->root(); }

std::vector<bool> Layout::removedDims() const {
  if (isBlocked())
    return std::vector<bool>(spt_.size(), false);
  std::vector<bool> removed = parent_->removedDims();
  // This slice removes the parent's dim_, counted among the dims the parent still has.
  int seen = 0;
  for (size_t d = 0; d < removed.size(); ++d)
    if (!removed[d] && seen++ == dim_) {
      removed[d] = true;
      break;
    }
  return removed;
}

int Layout::rootDim(int d) const {
  std::vector<bool> removed = removedDims();
  int seen = 0;
  for (size_t r = 0; r < removed.size(); ++r)
    if (!removed[r] && seen++ == d)
      return int(r);
  internalError("dimension " + std::to_string(d) + " out of range for " + str());
}

std::string Layout::str() const {
  if (!isBlocked())
    return "#slice<dim=" + std::to_string(dim_) + ", " + parent_->str() + ">";
  auto list = [](const std::vector<int> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  };
  std::string s = "#blocked<spt=" + list(spt_) + ", tpw=" + list(tpw_) + ", wpc=" + list(wpc_);
  if (order_ != blocked(spt_, tpw_, wpc_).order_)
    s += ", order=" + list(order_);
  return s + ">";
}

bool Layout::operator==(const Layout &o) const {
  if (kind_ != o.kind_)
    return false;
  if (isBlocked())
    return spt_ == o.spt_ && tpw_ == o.tpw_ && wpc_ == o.wpc_ && order_ == o.order_;
  return dim_ == o.dim_ && *parent_ == *o.parent_;
}

Layout withLastDimInThread(const Layout &l, int perThread) {
  if (!l.isBlocked())
    return Layout::slice(withLastDimInThread(l.parent(), perThread), l.sliceDim());
  std::vector<int> spt = l.sizePerThread(), tpw = l.threadsPerWarp(), wpc = l.warpsPerCTA();
  std::vector<int> order{l.rank()};
  order.insert(order.end(), l.order().begin(), l.order().end());
  spt.push_back(perThread);
  tpw.push_back(1);
  wpc.push_back(1);
  return Layout::blocked(spt, tpw, wpc, order);
}

LayoutMap::LayoutMap(const Layout &layout, const std::vector<int64_t> &shape)
    : root_(layout.root()) {
  if (int(shape.size()) != layout.rank())
    internalError("layout " + layout.str() + " applied to a block of rank " +
                  std::to_string(shape.size()));
  std::vector<bool> removed = layout.removedDims();
  size_t rank = removed.size();
  size_t next = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (removed[d]) {
      rootShape_.push_back(1);
    } else {
      rootShape_.push_back(shape[next++]);
      rootDims_.push_back(int(d));
    }
  }
  laneStride_.resize(rank);
  warpStride_.resize(rank);
  int64_t lanes = 1, warps = 1;
  for (int d : root_.order()) {
    laneStride_[size_t(d)] = lanes;
    warpStride_[size_t(d)] = warps;
    lanes *= root_.threadsPerWarp()[size_t(d)];
    warps *= root_.warpsPerCTA()[size_t(d)];
  }
  for (size_t d = 0; d < rank; ++d) {
    int64_t tile = root_.tile(int(d));
    int64_t reps = (rootShape_[d] + tile - 1) / tile;
    regs_.push_back(run(int(d)) * reps);
    total_ *= regs_.back();
  }
}

int64_t LayoutMap::run(int d) const {
  return std::min<int64_t>(root_.sizePerThread()[size_t(d)], rootShape_[size_t(d)]);
}

LayoutMap::Spread LayoutMap::spread(int d) const {
  int64_t extent = rootShape_[size_t(d)], s = run(d);
  int64_t tpw = root_.threadsPerWarp()[size_t(d)], wpc = root_.warpsPerCTA()[size_t(d)];
  int64_t lanes = std::clamp<int64_t>(extent / s, 1, tpw);
  int64_t warps = std::clamp<int64_t>(extent / (s * lanes), 1, wpc);
  return {s, lanes, warps, regs_[size_t(d)] / s};
}

bool LayoutMap::spreadsExactly(int d) const {
  int64_t extent = rootShape_[size_t(d)], tile = root_.tile(d);
  if (extent % tile == 0)
    return true;
  auto pow2 = [](int64_t v) { return std::has_single_bit(uint64_t(v)); };
  return extent < tile && pow2(extent) && pow2(root_.sizePerThread()[size_t(d)]) &&
         pow2(root_.threadsPerWarp()[size_t(d)]) && pow2(root_.warpsPerCTA()[size_t(d)]);
}

std::vector<int64_t> LayoutMap::registerIndex(int64_t k) const {
  std::vector<int64_t> index(regs_.size());
  for (int d : root_.order()) {
    index[size_t(d)] = k % regs_[size_t(d)];
    k /= regs_[size_t(d)];
  }
  return index;
}

int64_t LayoutMap::registerNumber(const std::vector<int64_t> &index) const {
  int64_t k = 0;
  const auto &order = root_.order();
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    k = k * regs_[size_t(*it)] + index[size_t(*it)];
  return k;
}

int64_t LayoutMap::registerOffset(int d, int64_t r) const {
  int64_t s = run(d);
  return (r / s) * root_.tile(d) + r % s;
}

int64_t flatIndexOf(const LayoutMap &map, const std::vector<int64_t> &shape, int64_t lane,
                    int64_t warp, const std::vector<int64_t> &regs) {
  const Layout &root = map.root();
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    int d = map.rootDim(int(i));
    int64_t spt = root.sizePerThread()[size_t(d)], tpw = root.threadsPerWarp()[size_t(d)],
            wpc = root.warpsPerCTA()[size_t(d)];
    int64_t c = (lane / map.laneStride(d)) % tpw * spt +
                (warp / map.warpStride(d)) % wpc * spt * tpw +
                map.registerOffset(d, regs[size_t(d)]);
    int64_t extent = map.rootShape()[size_t(d)];
    if (extent < root.tile(d))
      c %= extent;
    flat = flat * shape[i] + c;
  }
  return flat;
}

static int64_t warpsOf(const Layout &l) {
  int64_t w = 1;
  for (int c : l.root().warpsPerCTA())
    w *= c;
  return w;
}

bool samePlacement(const Layout &a, const std::vector<int64_t> &sa, const Layout &b,
                   const std::vector<int64_t> &sb) {
  auto count = [](const std::vector<int64_t> &s) {
    int64_t n = 1;
    for (int64_t d : s)
      n *= d;
    return n;
  };
  if (count(sa) != count(sb) || warpsOf(a) != warpsOf(b))
    return false;
  LayoutMap ma(a, sa), mb(b, sb);
  if (ma.elementsPerThread() != mb.elementsPerThread())
    return false;
  // Register by register, every thread: the first thread usually tells layouts apart.
  const int64_t warps = warpsOf(a);
  for (int64_t k = 0; k < ma.elementsPerThread(); ++k) {
    std::vector<int64_t> ra = ma.registerIndex(k), rb = mb.registerIndex(k);
    for (int64_t warp = 0; warp < warps; ++warp)
      for (int64_t lane = 0; lane < 32; ++lane)
        if (flatIndexOf(ma, sa, lane, warp, ra) != flatIndexOf(mb, sb, lane, warp, rb))
          return false;
  }
  return true;
}

std::optional<Layout> reshapedInPlace(const Layout &l, const std::vector<int64_t> &from,
                                      const std::vector<int64_t> &to) {
  if (!l.isBlocked() || int(from.size()) != l.rank() || to.empty())
    return std::nullopt;
  auto log2 = [](int64_t v) { return std::countr_zero(uint64_t(v)); };
  for (const auto *shape : {&from, &to})
    for (int64_t d : *shape)
      if (d < 1 || !std::has_single_bit(uint64_t(d)))
        return std::nullopt;
  int rank = l.rank();
  for (int d = 0; d < rank; ++d)
    if (l.order()[size_t(d)] != rank - 1 - d || from[size_t(d)] < l.tile(d))
      return std::nullopt; // another order, or threads holding copies
  // What each bit of the flat index is under `l`, lowest first: the last dimension's run,
  // lanes, warps and repeats, then the dimension before it.
  std::string bits;
  for (int d = rank - 1; d >= 0; --d) {
    bits += std::string(size_t(log2(l.sizePerThread()[size_t(d)])), 'R');
    bits += std::string(size_t(log2(l.threadsPerWarp()[size_t(d)])), 'L');
    bits += std::string(size_t(log2(l.warpsPerCTA()[size_t(d)])), 'W');
    bits += std::string(size_t(log2(from[size_t(d)] / l.tile(d))), 'R');
  }
  size_t outRank = to.size();
  std::vector<int> spt(outRank, 1), tpw(outRank, 1), wpc(outRank, 1);
  size_t at = 0;
  for (size_t e = outRank; e-- > 0;) {
    std::string_view mine = std::string_view(bits).substr(at, size_t(log2(to[e])));
    at += mine.size();
    size_t i = 0;
    auto take = [&](char kind) {
      int n = 0;
      for (; i < mine.size() && mine[i] == kind; ++i)
        ++n;
      return 1 << n;
    };
    spt[e] = take('R');
    tpw[e] = take('L');
    wpc[e] = take('W');
    if (mine.find_first_not_of('R', i) != std::string_view::npos)
      return std::nullopt; // lanes or warps after this dimension's repeats began
  }
  Layout candidate = Layout::blocked(spt, tpw, wpc);
  if (!samePlacement(l, from, candidate, to))
    return std::nullopt;
  return candidate;
}

} // namespace tritium::ir
