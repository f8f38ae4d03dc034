// Gives requests the KV blocks their tokens need, finds and registers cached
// prefixes, and takes the blocks back when a request finishes or is
// preempted.
#ifndef KILN_ENGINE_KVCACHEMANAGER_H
#define KILN_ENGINE_KVCACHEMANAGER_H

#include "BlockPool.h"
#include "Request.h"

namespace kiln::engine {

/// A run of cached blocks that a request's tokens start with.
struct CachedPrefix {
  std::vector<BlockId> blocks;
  uint64_t lastHash = 0; // the hash of the last block's key
  int32_t numTokens(int32_t blockSize) const {
    return (int32_t)blocks.size() * blockSize;
  }
};

class KVCacheManager {
public:
  KVCacheManager(int32_t numBlocks, int32_t blockSize, bool enablePrefixCaching);

  int32_t blockSize() const { return blockSize_; }
  const BlockPool &pool() const { return pool_; }

  /// The cached blocks equal to the request's leading full blocks. It stops
  /// one token short of the request's end: the last token must be computed,
  /// for the logits that sample the next.
  CachedPrefix findCachedPrefix(const Request &request) const;

  /// Makes room for `numNewTokens` more tokens after the request's computed
  /// ones. A request with none computed first takes `prefix` (from
  /// findCachedPrefix; its tokens count as computed). Returns false, with
  /// nothing changed, when too few blocks are free.
  bool allocate(Request &request, int32_t numNewTokens,
                const CachedPrefix &prefix = {});

  /// Registers the request's full, computed blocks in the prefix cache.
  void cacheComputedBlocks(Request &request);

  /// Returns all of the request's blocks; its computed tokens are lost.
  void free(Request &request);

private:
  BlockKey keyOf(const Request &request, int32_t blockIndex,
                 uint64_t parentHash) const;

  BlockPool pool_;
  int32_t blockSize_;
};

} // namespace kiln::engine

#endif // KILN_ENGINE_KVCACHEMANAGER_H
