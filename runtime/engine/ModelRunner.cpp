#include "ModelRunner.h"

#include "runtime/src/HalfFloat.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

namespace kiln::engine {

namespace {

// Takes the message of a failed status and frees it; empty for success.
std::string takeMessage(kiln_status_t status) {
  if (!status)
    return {};
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

std::string describe(const kiln_io_info_t &info) {
  std::string text = std::string(kiln_dtype_name(info.dtype)) + "[";
  for (int32_t i = 0; i < info.rank; ++i) {
    if (i)
      text += ", ";
    text += info.dims[i].size >= 0 ? std::to_string(info.dims[i].size)
                                   : std::string(info.dims[i].name);
  }
  return text + "]";
}

// Parses "prefix" N "suffix" into N; -1 when `name` is not of that form.
int32_t layerIndex(const std::string &name, const std::string &prefix,
                   const std::string &suffix) {
  if (name.size() <= prefix.size() + suffix.size() ||
      name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), ::isdigit))
    return -1;
  return std::stoi(digits);
}

// "PREFIX N.key" or "PREFIX N.value": the layer N, with `kv` 0 for the key
// and 1 for the value; -1 for any other name.
int32_t kvLayerIndex(const std::string &name, const std::string &prefix, int &kv) {
  for (kv = 0; kv < 2; ++kv) {
    int32_t layer = layerIndex(name, prefix, kv ? ".value" : ".key");
    if (layer >= 0)
      return layer;
  }
  return -1;
}

} // namespace

std::unique_ptr<ModelRunner> ModelRunner::create(kiln_model_t *model,
                                                 std::string &error) {
  auto fail = [&](std::string message) -> std::unique_ptr<ModelRunner> {
    error = "the model is not a decoder with a KV-cache interface the engine "
            "runs: " + message;
    return nullptr;
  };
  // The KV cache's inputs and outputs: the dense interface's past and
  // present by layer ([layer][kv] -> index), or the paged interface's pool,
  // tables and lengths, and new rows by layer.
  std::map<int32_t, std::array<int32_t, 2>> pasts, presents, newRows;
  int32_t inputIds = -1, attentionMask = -1, positionIds = -1, logits = -1;
  int32_t kvCache = -1, blockTables = -1, pastLengths = -1;
  kiln_dtype_t cacheDtype = KILN_DTYPE_F32;
  kiln_io_info_t info;
  auto expect = [&](kiln_dtype_t dtype, int32_t rank) {
    return info.dtype == dtype && info.rank == rank;
  };

  for (int32_t i = 0; i < kiln_model_input_count(model); ++i) {
    kiln_status_t status = kiln_model_input_info(model, i, &info);
    if (status)
      return fail(takeMessage(status));
    std::string name = info.name;
    int kv = 0;
    int32_t layer = kvLayerIndex(name, "past_key_values.", kv);
    if (name == "input_ids" || name == "attention_mask" || name == "position_ids" ||
        name == "block_tables") {
      if (!expect(KILN_DTYPE_I64, 2))
        return fail("input '" + name + "' is " + describe(info) +
                    ", expected i64 of rank 2");
      (name == "input_ids"        ? inputIds
       : name == "attention_mask" ? attentionMask
       : name == "position_ids"   ? positionIds
                                  : blockTables) = i;
    } else if (name == "past_lengths") {
      if (!expect(KILN_DTYPE_I64, 1))
        return fail("input 'past_lengths' is " + describe(info) + ", expected i64[batch]");
      pastLengths = i;
    } else if (name == "kv_cache") {
      if (!(expect(KILN_DTYPE_F32, 6) || expect(KILN_DTYPE_F16, 6) ||
            expect(KILN_DTYPE_BF16, 6)) ||
          std::any_of(info.dims + 1, info.dims + 6,
                      [](const kiln_dim_t &dim) { return dim.size < 0; }))
        return fail("input 'kv_cache' is " + describe(info) +
                    ", expected f32, f16 or bf16 [kv_blocks, layers, 2, kv_heads, "
                    "block_size, head_dim], static but for the blocks");
      cacheDtype = info.dtype;
      kvCache = i;
    } else if (layer >= 0) {
      if (!expect(KILN_DTYPE_F32, 4) || info.dims[1].size < 0 || info.dims[3].size < 0)
        return fail("input '" + name + "' is " + describe(info) +
                    ", expected f32[batch, kv_heads, past_sequence, head_dim] "
                    "with static kv_heads and head_dim");
      pasts.try_emplace(layer, std::array<int32_t, 2>{-1, -1}).first->second[kv] = i;
    } else {
      return fail("input '" + name + "' is none of input_ids, attention_mask, "
                  "position_ids and past_key_values.N.key/.value (or kv_cache, "
                  "block_tables and past_lengths)");
    }
  }
  for (int32_t i = 0; i < kiln_model_output_count(model); ++i) {
    kiln_status_t status = kiln_model_output_info(model, i, &info);
    if (status)
      return fail(takeMessage(status));
    std::string name = info.name;
    int kv = 0;
    if (name == "logits") {
      if (!expect(KILN_DTYPE_F32, 3) || info.dims[2].size <= 0)
        return fail("output 'logits' is " + describe(info) +
                    ", expected f32[batch, sequence, vocab] with a static vocab");
      logits = i;
    } else if (int32_t layer = kvLayerIndex(name, "present.", kv); layer >= 0) {
      presents.try_emplace(layer, std::array<int32_t, 2>{-1, -1}).first->second[kv] = i;
    } else if (int32_t layer = kvLayerIndex(name, "new_key_values.", kv); layer >= 0) {
      newRows.try_emplace(layer, std::array<int32_t, 2>{-1, -1}).first->second[kv] = i;
    } else {
      return fail("output '" + name + "' is neither logits nor present.N.key/.value "
                  "(nor new_key_values.N.key/.value)");
    }
  }
  // position_ids is optional: BLOOM's positions are its ALiBi biases, which
  // it takes from the attention mask.
  for (auto [index, name] : {std::pair{inputIds, "input input_ids"},
                             {attentionMask, "input attention_mask"},
                             {logits, "output logits"}})
    if (index < 0)
      return fail("it has no " + std::string(name));

  const bool paged = kvCache >= 0;
  if (paged && (blockTables < 0 || pastLengths < 0 || !pasts.empty() || !presents.empty()))
    return fail("a paged cache (kv_cache) takes block_tables and past_lengths, and "
                "no past_key_values or present outputs");
  if (!paged && pasts.empty())
    return fail("it has no past_key_values.N.key/.value inputs (nor a kv_cache)");
  if (!paged && !newRows.empty())
    return fail("new_key_values outputs come with a paged kv_cache input");

  DecoderShape shape;
  std::vector<int32_t> kvInputs, kvOutputs; // [layer * 2 + kv]
  const auto &outputsByLayer = paged ? newRows : presents;
  if (paged) {
    kiln_model_input_info(model, kvCache, &info);
    shape.numLayers = (int32_t)info.dims[1].size;
    shape.numKvHeads = (int32_t)info.dims[3].size;
    shape.blockSize = (int32_t)info.dims[4].size;
    shape.headDim = (int32_t)info.dims[5].size;
    if (info.dims[2].size != 2)
      return fail("input 'kv_cache' is " + describe(info) + ": dim 2 must be 2 (key, value)");
  } else {
    shape.numLayers = (int32_t)pasts.size();
    kiln_model_input_info(model, pasts.begin()->second[0], &info);
    shape.numKvHeads = (int32_t)info.dims[1].size;
    shape.headDim = (int32_t)info.dims[3].size;
  }
  for (int32_t layer = 0; layer < shape.numLayers; ++layer) {
    std::string n = std::to_string(layer);
    if (!paged) {
      auto past = pasts.find(layer);
      if (past == pasts.end() || past->second[0] < 0 || past->second[1] < 0)
        return fail("past_key_values." + n + ".key or .value is missing (the "
                    "layers must be numbered 0 to " +
                    std::to_string(shape.numLayers - 1) + ")");
      for (int kv = 0; kv < 2; ++kv) {
        kiln_model_input_info(model, past->second[kv], &info);
        if (info.dims[1].size != shape.numKvHeads || info.dims[3].size != shape.headDim)
          return fail("input '" + std::string(info.name) + "' is " + describe(info) +
                      ": every layer must have the same kv_heads and head_dim");
        kvInputs.push_back(past->second[kv]);
      }
    }
    auto rows = outputsByLayer.find(layer);
    if (rows == outputsByLayer.end() || rows->second[0] < 0 || rows->second[1] < 0)
      return fail(std::string("output ") + (paged ? "new_key_values." : "present.") + n +
                  ".key or .value is missing");
    kvOutputs.push_back(rows->second[0]);
    kvOutputs.push_back(rows->second[1]);
  }
  if ((int32_t)outputsByLayer.size() != shape.numLayers)
    return fail("it has " + std::to_string(outputsByLayer.size()) +
                " layers of key/value outputs but " + std::to_string(shape.numLayers) +
                " of inputs");
  kiln_model_output_info(model, logits, &info);
  shape.vocabSize = (int32_t)info.dims[2].size;

  kiln_io_info_t ids, mask;
  kiln_model_input_info(model, inputIds, &ids);
  kiln_model_input_info(model, attentionMask, &mask);
  int64_t pastMin = 0, pastMax = mask.dims[1].max - 1;
  if (!paged) {
    kiln_model_input_info(model, kvInputs[0], &info);
    pastMin = info.dims[2].min;
    pastMax = info.dims[2].max;
  }
  if (ids.dims[0].min > 1 || ids.dims[1].min > 1 || pastMin > 0)
    return fail("its bounds must allow batch 1, sequence 1 and past_sequence 0 "
                "(input_ids is " + describe(ids) + " with batch >= " +
                std::to_string(ids.dims[0].min) + ", sequence >= " +
                std::to_string(ids.dims[1].min) + ", past_sequence >= " +
                std::to_string(pastMin) + ")");
  shape.maxBatch = ids.dims[0].max;
  shape.maxSequence = ids.dims[1].max;
  shape.maxModelLen = std::min(mask.dims[1].max, pastMax + 1);

  kiln_session_t *session = nullptr;
  kiln_status_t status = kiln_session_create(model, &session);
  if (status) {
    error = "cannot create a session: " + takeMessage(status);
    return nullptr;
  }
  std::unique_ptr<ModelRunner> runner(new ModelRunner(model, session));
  runner->shape_ = shape;
  runner->inputIds_ = inputIds;
  runner->attentionMask_ = attentionMask;
  runner->positionIds_ = positionIds;
  runner->logits_ = logits;
  runner->kvCache_ = kvCache;
  runner->cacheDtype_ = cacheDtype;
  runner->blockTables_ = blockTables;
  runner->pastLengths_ = pastLengths;
  runner->pastInputs_ = std::move(kvInputs);
  runner->kvOutputs_ = std::move(kvOutputs);
  runner->pasts_.resize(runner->pastInputs_.size());
  return runner;
}

ModelRunner::~ModelRunner() { kiln_session_release(session_); }

size_t ModelRunner::blockBytes(int32_t blockSize) const {
  return (size_t)shape_.numLayers * 2 * shape_.numKvHeads * blockSize *
         shape_.headDim * kiln_dtype_size(cacheDtype_);
}

void ModelRunner::allocateCache(int32_t numBlocks, int32_t blockSize) {
  blockSize_ = blockSize;
  cache_.assign(blockBytes(blockSize) * numBlocks, 0);
}

char *ModelRunner::cacheAt(BlockId block, int32_t layer, int32_t kv,
                           int32_t head, int32_t slot) {
  size_t index = (((size_t)block * shape_.numLayers + layer) * 2 + kv);
  index = (index * shape_.numKvHeads + head) * blockSize_ + slot;
  return cache_.data() + index * shape_.headDim * kiln_dtype_size(cacheDtype_);
}

void ModelRunner::storeRows(const float *values, size_t count, char *to) const {
  if (cacheDtype_ == KILN_DTYPE_F32) {
    std::memcpy(to, values, count * sizeof(float));
    return;
  }
  const bool bfloat = cacheDtype_ == KILN_DTYPE_BF16;
  for (size_t i = 0; i < count; ++i) {
    const uint16_t narrow = bfloat ? rt::floatToBfloat16(values[i]) : rt::floatToHalf(values[i]);
    std::memcpy(to + 2 * i, &narrow, sizeof narrow);
  }
}

void ModelRunner::gatherPast(const std::vector<const ScheduledRequest *> &group,
                             int64_t past) {
  const int32_t heads = shape_.numKvHeads, dim = shape_.headDim;
  for (int32_t layer = 0; layer < shape_.numLayers; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv) {
      std::vector<float> &dense = pasts_[layer * 2 + kv];
      // One element at least, so that an empty past still has an address.
      dense.resize(std::max<size_t>(group.size() * heads * past * dim, 1));
      for (size_t i = 0; i < group.size(); ++i) {
        const Request &request = *group[i]->request;
        int32_t length = request.numComputedTokens;
        int64_t padding = past - length;
        for (int32_t head = 0; head < heads; ++head) {
          // Finite zeros in the padding: a masked score's weight is 0, and
          // 0 * NaN would not be.
          float *row = dense.data() + ((i * heads + head) * past) * dim;
          std::fill(row, row + padding * dim, 0.0f);
          row += padding * dim;
          for (int32_t token = 0; token < length;) {
            int32_t slot = token % blockSize_;
            int32_t run = std::min(blockSize_ - slot, length - token);
            std::memcpy(row + (size_t)token * dim,
                        cacheAt(request.blocks[token / blockSize_], layer, kv,
                                head, slot),
                        sizeof(float) * run * dim);
            token += run;
          }
        }
      }
    }
}

void ModelRunner::fillTables(const std::vector<const ScheduledRequest *> &group) {
  tableWidth_ = 1;
  for (const ScheduledRequest *s : group)
    tableWidth_ = std::max<int64_t>(tableWidth_, (int64_t)s->request->blocks.size());
  tables_.assign(group.size() * tableWidth_, 0);
  lengths_.resize(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    const Request &request = *group[i]->request;
    std::copy(request.blocks.begin(), request.blocks.end(),
              tables_.begin() + i * tableWidth_);
    lengths_[i] = request.numComputedTokens;
  }
}

void ModelRunner::scatterNewRows(const std::vector<const ScheduledRequest *> &group,
                                 int64_t first, int64_t newTokens) {
  const int32_t heads = shape_.numKvHeads, dim = shape_.headDim;
  const int64_t total = first + newTokens;
  for (int32_t layer = 0; layer < shape_.numLayers; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv) {
      kiln_tensor_t output;
      kiln_session_output(session_, kvOutputs_[layer * 2 + kv], &output);
      const float *data = static_cast<const float *>(output.data);
      for (size_t i = 0; i < group.size(); ++i) {
        const Request &request = *group[i]->request;
        int32_t start = request.numComputedTokens;
        for (int32_t head = 0; head < heads; ++head) {
          const float *rows = data + ((i * heads + head) * total + first) * dim;
          for (int32_t t = 0; t < newTokens;) {
            int32_t token = start + t;
            int32_t slot = token % blockSize_;
            int32_t run = std::min<int64_t>(blockSize_ - slot, newTokens - t);
            storeRows(rows + (size_t)t * dim, (size_t)run * dim,
                      cacheAt(request.blocks[token / blockSize_], layer, kv, head, slot));
            t += run;
          }
        }
      }
    }
}

std::string ModelRunner::runGroup(const std::vector<const ScheduledRequest *> &group,
                                  std::vector<float> &logits) {
  const int64_t batch = (int64_t)group.size();
  const int64_t newTokens = group[0]->numNewTokens;
  int64_t past = 0;
  for (const ScheduledRequest *s : group)
    past = std::max<int64_t>(past, s->request->numComputedTokens);
  const int64_t total = past + newTokens;

  ids_.resize(batch * newTokens);
  positions_.resize(batch * newTokens);
  mask_.assign(batch * total, 0);
  for (int64_t i = 0; i < batch; ++i) {
    const Request &request = *group[i]->request;
    int32_t start = request.numComputedTokens;
    for (int64_t t = 0; t < newTokens; ++t) {
      ids_[i * newTokens + t] = request.tokens[start + t];
      positions_[i * newTokens + t] = start + t;
    }
    std::fill(mask_.begin() + i * total + (past - start),
              mask_.begin() + (i + 1) * total, 1);
  }
  const bool paged = kvCache_ >= 0;
  if (paged)
    fillTables(group);
  else
    gatherPast(group, past);

  std::string error;
  auto bind = [&](int32_t input, kiln_dtype_t dtype, std::vector<int64_t> shape,
                  void *data, size_t bytes) {
    kiln_tensor_t tensor = {dtype, (int32_t)shape.size(), shape.data(), data, bytes};
    if (error.empty())
      error = takeMessage(kiln_session_bind_input(session_, input, &tensor));
  };
  bind(inputIds_, KILN_DTYPE_I64, {batch, newTokens}, ids_.data(),
       ids_.size() * sizeof(int64_t));
  if (positionIds_ >= 0)
    bind(positionIds_, KILN_DTYPE_I64, {batch, newTokens}, positions_.data(),
         positions_.size() * sizeof(int64_t));
  bind(attentionMask_, KILN_DTYPE_I64, {batch, total}, mask_.data(),
       mask_.size() * sizeof(int64_t));
  for (size_t p = 0; p < pastInputs_.size(); ++p)
    bind(pastInputs_[p], KILN_DTYPE_F32,
         {batch, shape_.numKvHeads, past, shape_.headDim}, pasts_[p].data(),
         sizeof(float) * batch * shape_.numKvHeads * past * shape_.headDim);
  if (paged) {
    const int64_t numBlocks = (int64_t)(cache_.size() / blockBytes(blockSize_));
    bind(kvCache_, cacheDtype_,
         {numBlocks, shape_.numLayers, 2, shape_.numKvHeads, blockSize_, shape_.headDim},
         cache_.data(), cache_.size());
    bind(blockTables_, KILN_DTYPE_I64, {batch, tableWidth_}, tables_.data(),
         tables_.size() * sizeof(int64_t));
    bind(pastLengths_, KILN_DTYPE_I64, {batch}, lengths_.data(),
         lengths_.size() * sizeof(int64_t));
  }
  if (error.empty())
    error = takeMessage(kiln_session_run(session_));
  if (!error.empty())
    return error;

  // The dense presents repeat the padded past before the new rows.
  scatterNewRows(group, paged ? 0 : past, newTokens);
  kiln_tensor_t out;
  kiln_session_output(session_, logits_, &out);
  const float *rows = static_cast<const float *>(out.data);
  for (int64_t i = 0; i < batch; ++i)
    if (group[i]->samples) {
      const float *last = rows + ((i + 1) * newTokens - 1) * shape_.vocabSize;
      logits.insert(logits.end(), last, last + shape_.vocabSize);
    }
  return {};
}

std::vector<std::string>
ModelRunner::execute(const std::vector<ScheduledRequest> &scheduled,
                     std::vector<const float *> &logits) {
  // Decode tokens run together, up to the model's batch bound; each prefill
  // chunk runs alone, so that no request pays for another's padding.
  std::vector<std::vector<const ScheduledRequest *>> groups;
  std::vector<const ScheduledRequest *> decodes;
  for (const ScheduledRequest &s : scheduled) {
    if (s.numNewTokens == 1) {
      decodes.push_back(&s);
      if ((int64_t)decodes.size() == shape_.maxBatch)
        groups.push_back(std::move(decodes)), decodes.clear();
    } else {
      groups.push_back({&s});
    }
  }
  if (!decodes.empty())
    groups.push_back(std::move(decodes));

  // Each group's rows are kept (the next run overwrites the session's
  // outputs) and pointed to in `scheduled` order.
  std::vector<std::string> errors(scheduled.size());
  logits.assign(scheduled.size(), nullptr);
  if (groupLogits_.size() < groups.size())
    groupLogits_.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    groupLogits_[g].clear();
    std::string error = runGroup(groups[g], groupLogits_[g]);
    size_t row = 0;
    for (const ScheduledRequest *s : groups[g]) {
      size_t index = s - scheduled.data();
      if (!error.empty())
        errors[index] = error;
      else if (s->samples)
        logits[index] = groupLogits_[g].data() + (row++) * shape_.vocabSize;
    }
  }
  return errors;
}

} // namespace kiln::engine
