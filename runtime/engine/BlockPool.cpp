#include "BlockPool.h"

#include <cassert>

namespace kiln::engine {

uint64_t BlockKey::hash() const {
  // FNV-1a over the parent's hash and the tokens, 64-bit. lookup() compares
  // the whole key, so a collision can only make two different blocks compete
  // for one index entry, never share data.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      h ^= (value >> (8 * byte)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(parentHash);
  for (int64_t token : tokens)
    mix((uint64_t)token);
  return h;
}

BlockPool::BlockPool(int32_t numBlocks, bool enablePrefixCaching)
    : blocks_(numBlocks), enablePrefixCaching_(enablePrefixCaching) {
  for (BlockId block = 0; block < numBlocks; ++block)
    pushFreeTail(block);
}

void BlockPool::pushFreeTail(BlockId block) {
  Block &b = blocks_[block];
  b.prev = freeTail_;
  b.next = -1;
  if (freeTail_ != -1)
    blocks_[freeTail_].next = block;
  else
    freeHead_ = block;
  freeTail_ = block;
  ++numFree_;
  numCachedFree_ += b.key.has_value();
}

void BlockPool::unlinkFree(BlockId block) {
  Block &b = blocks_[block];
  if (b.prev != -1)
    blocks_[b.prev].next = b.next;
  else
    freeHead_ = b.next;
  if (b.next != -1)
    blocks_[b.next].prev = b.prev;
  else
    freeTail_ = b.prev;
  b.prev = b.next = -1;
  --numFree_;
  numCachedFree_ -= b.key.has_value();
}

void BlockPool::forget(BlockId block) {
  Block &b = blocks_[block];
  if (!b.key)
    return;
  auto it = cached_.find(b.key->hash());
  if (it != cached_.end() && it->second == block)
    cached_.erase(it);
  b.key.reset();
}

std::optional<std::vector<BlockId>> BlockPool::allocate(int32_t count) {
  if (count > numFree_)
    return std::nullopt;
  std::vector<BlockId> taken;
  taken.reserve(count);
  for (int32_t i = 0; i < count; ++i) {
    BlockId block = freeHead_;
    unlinkFree(block);
    forget(block);
    blocks_[block].refCount = 1;
    taken.push_back(block);
  }
  return taken;
}

void BlockPool::release(const std::vector<BlockId> &blocks) {
  for (BlockId block : blocks) {
    Block &b = blocks_[block];
    assert(b.refCount > 0 && "releasing a free block");
    if (--b.refCount == 0)
      pushFreeTail(block);
  }
}

void BlockPool::acquire(BlockId block) {
  if (blocks_[block].refCount++ == 0)
    unlinkFree(block);
}

std::optional<BlockId> BlockPool::lookup(const BlockKey &key) const {
  if (!enablePrefixCaching_)
    return std::nullopt;
  auto it = cached_.find(key.hash());
  if (it == cached_.end() || !(*blocks_[it->second].key == key))
    return std::nullopt;
  return it->second;
}

void BlockPool::cache(BlockId block, BlockKey key) {
  if (!enablePrefixCaching_ || blocks_[block].key)
    return;
  uint64_t hash = key.hash();
  if (cached_.count(hash))
    return;
  cached_.emplace(hash, block);
  blocks_[block].key = std::move(key);
  numCachedFree_ += blocks_[block].refCount == 0;
}

} // namespace kiln::engine
