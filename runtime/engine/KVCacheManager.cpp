#include "KVCacheManager.h"

#include <algorithm>

namespace kiln::engine {

KVCacheManager::KVCacheManager(int32_t numBlocks, int32_t blockSize,
                               bool enablePrefixCaching)
    : pool_(numBlocks, enablePrefixCaching), blockSize_(blockSize) {}

BlockKey KVCacheManager::keyOf(const Request &request, int32_t blockIndex,
                               uint64_t parentHash) const {
  auto begin = request.tokens.begin() + (size_t)blockIndex * blockSize_;
  return BlockKey{parentHash, std::vector<int64_t>(begin, begin + blockSize_)};
}

CachedPrefix KVCacheManager::findCachedPrefix(const Request &request) const {
  CachedPrefix prefix;
  int32_t maxBlocks = (request.numTokens() - 1) / blockSize_;
  for (int32_t i = 0; i < maxBlocks; ++i) {
    BlockKey key = keyOf(request, i, prefix.lastHash);
    std::optional<BlockId> block = pool_.lookup(key);
    if (!block)
      break;
    prefix.blocks.push_back(*block);
    prefix.lastHash = key.hash();
  }
  return prefix;
}

bool KVCacheManager::allocate(Request &request, int32_t numNewTokens,
                              const CachedPrefix &prefix) {
  bool takesPrefix = request.blocks.empty() && !prefix.blocks.empty();
  int32_t computed =
      takesPrefix ? prefix.numTokens(blockSize_) : request.numComputedTokens;
  int32_t heldBlocks =
      takesPrefix ? (int32_t)prefix.blocks.size() : (int32_t)request.blocks.size();
  int32_t neededBlocks =
      (computed + numNewTokens + blockSize_ - 1) / blockSize_ - heldBlocks;
  // Cached blocks that are free leave the free queue when taken.
  int32_t freeTaken = 0;
  if (takesPrefix)
    for (BlockId block : prefix.blocks)
      freeTaken += pool_.refCount(block) == 0;
  if (std::max(neededBlocks, 0) > pool_.numFree() - freeTaken)
    return false;
  if (takesPrefix) {
    for (BlockId block : prefix.blocks)
      pool_.acquire(block);
    request.blocks = prefix.blocks;
    request.numComputedTokens = computed;
    request.numCachedBlocks = (int32_t)prefix.blocks.size();
    request.lastCachedHash = prefix.lastHash;
  }
  if (neededBlocks > 0) {
    std::vector<BlockId> fresh = *pool_.allocate(neededBlocks);
    request.blocks.insert(request.blocks.end(), fresh.begin(), fresh.end());
  }
  return true;
}

void KVCacheManager::cacheComputedBlocks(Request &request) {
  int32_t fullBlocks = request.numComputedTokens / blockSize_;
  for (int32_t i = request.numCachedBlocks; i < fullBlocks; ++i) {
    BlockKey key = keyOf(request, i, request.lastCachedHash);
    request.lastCachedHash = key.hash();
    pool_.cache(request.blocks[i], std::move(key));
  }
  request.numCachedBlocks = std::max(request.numCachedBlocks, fullBlocks);
}

void KVCacheManager::free(Request &request) {
  // The tail first: the free queue's head is evicted first, and a prompt's
  // later blocks are the least likely to be shared.
  std::vector<BlockId> reversed(request.blocks.rbegin(), request.blocks.rend());
  pool_.release(reversed);
  request.blocks.clear();
  request.numComputedTokens = 0;
  request.numCachedBlocks = 0;
  request.lastCachedHash = 0;
}

} // namespace kiln::engine
