// The KV cache's blocks: reference counts, the free queue, and the prefix
// cache's index of full blocks by content.
//
// A block with no reference is free. Free blocks wait in one queue, least
// recently freed first; allocation takes from its head. A free block may
// still hold a cached prefix (its key is in the index): it is reused as it is
// when a later request's prefix matches, taken out of the queue, and its
// cached content is forgotten only when allocation reaches it (LRU eviction).
#ifndef KILN_ENGINE_BLOCKPOOL_H
#define KILN_ENGINE_BLOCKPOOL_H

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kiln::engine {

using BlockId = int32_t;

/// What a full block holds: its tokens, and the hash of everything before
/// them (the chain of blocks in front of it). Two requests share a block only
/// when both are equal, so equal tokens after different prefixes never do.
struct BlockKey {
  uint64_t parentHash = 0;
  std::vector<int64_t> tokens;

  /// The hash that names this block as a parent.
  uint64_t hash() const;
  bool operator==(const BlockKey &other) const {
    return parentHash == other.parentHash && tokens == other.tokens;
  }
};

class BlockPool {
public:
  BlockPool(int32_t numBlocks, bool enablePrefixCaching);

  int32_t numBlocks() const { return (int32_t)blocks_.size(); }
  /// Blocks no request holds, cached ones included.
  int32_t numFree() const { return numFree_; }
  /// Free blocks that still hold a cached prefix.
  int32_t numCachedFree() const { return numCachedFree_; }
  int32_t refCount(BlockId block) const { return blocks_[block].refCount; }

  /// Takes `count` blocks from the head of the free queue, each with one
  /// reference, forgetting any cached content; nothing when fewer are free.
  std::optional<std::vector<BlockId>> allocate(int32_t count);
  /// Drops one reference from each block; blocks that reach none join the
  /// free queue's tail in the order given.
  void release(const std::vector<BlockId> &blocks);
  /// Adds a reference to a block found by lookup(); a free one leaves the
  /// free queue.
  void acquire(BlockId block);

  /// The cached block with exactly this content, if any.
  std::optional<BlockId> lookup(const BlockKey &key) const;
  /// Records a full, computed block under its content (no-op without prefix
  /// caching, or when an equal block is already cached).
  void cache(BlockId block, BlockKey key);

private:
  struct Block {
    int32_t refCount = 0;
    // Links of the free queue (-1: none); meaningful while refCount == 0.
    BlockId prev = -1, next = -1;
    std::optional<BlockKey> key;
  };
  void pushFreeTail(BlockId block);
  void unlinkFree(BlockId block);
  void forget(BlockId block);

  std::vector<Block> blocks_;
  BlockId freeHead_ = -1, freeTail_ = -1;
  int32_t numFree_ = 0;
  int32_t numCachedFree_ = 0; // free blocks with a key
  bool enablePrefixCaching_;
  std::unordered_map<uint64_t, BlockId> cached_; // by BlockKey::hash()
};

} // namespace kiln::engine

#endif // KILN_ENGINE_BLOCKPOOL_H
