#include "ModelRunner.h"

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
    error = "the model is not a decoder with the KV-cache interface the "
            "engine runs: " + message;
    return nullptr;
  };
  // Kv-cache inputs and outputs by layer: [layer][kv] -> index.
  std::map<int32_t, std::array<int32_t, 2>> pasts, presents;
  int32_t inputIds = -1, attentionMask = -1, positionIds = -1, logits = -1;
  kiln_io_info_t info;

  for (int32_t i = 0; i < kiln_model_input_count(model); ++i) {
    kiln_status_t status = kiln_model_input_info(model, i, &info);
    if (status)
      return fail(takeMessage(status));
    std::string name = info.name;
    auto expect = [&](kiln_dtype_t dtype, int32_t rank) {
      return info.dtype == dtype && info.rank == rank;
    };
    if (name == "input_ids" || name == "attention_mask" || name == "position_ids") {
      if (!expect(KILN_DTYPE_I64, 2))
        return fail("input '" + name + "' is " + describe(info) +
                    ", expected i64[batch, ...] of rank 2");
      (name == "input_ids" ? inputIds
       : name == "attention_mask" ? attentionMask
                                  : positionIds) = i;
      continue;
    }
    int kv = 0;
    int32_t layer = kvLayerIndex(name, "past_key_values.", kv);
    if (layer < 0)
      return fail("input '" + name + "' is none of input_ids, attention_mask, "
                  "position_ids and past_key_values.N.key/.value");
    if (!expect(KILN_DTYPE_F32, 4) || info.dims[1].size < 0 ||
        info.dims[3].size < 0)
      return fail("input '" + name + "' is " + describe(info) +
                  ", expected f32[batch, kv_heads, past_sequence, head_dim] "
                  "with static kv_heads and head_dim");
    pasts.try_emplace(layer, std::array<int32_t, 2>{-1, -1})
        .first->second[kv] = i;
  }
  for (int32_t i = 0; i < kiln_model_output_count(model); ++i) {
    kiln_status_t status = kiln_model_output_info(model, i, &info);
    if (status)
      return fail(takeMessage(status));
    std::string name = info.name;
    if (name == "logits") {
      if (info.dtype != KILN_DTYPE_F32 || info.rank != 3 || info.dims[2].size <= 0)
        return fail("output 'logits' is " + describe(info) +
                    ", expected f32[batch, sequence, vocab] with a static vocab");
      logits = i;
      continue;
    }
    int kv = 0;
    int32_t layer = kvLayerIndex(name, "present.", kv);
    if (layer < 0)
      return fail("output '" + name + "' is neither logits nor present.N.key/.value");
    presents.try_emplace(layer, std::array<int32_t, 2>{-1, -1})
        .first->second[kv] = i;
  }
  for (auto [index, name] : {std::pair{inputIds, "input input_ids"},
                             {attentionMask, "input attention_mask"},
                             {positionIds, "input position_ids"},
                             {logits, "output logits"}})
    if (index < 0)
      return fail("it has no " + std::string(name));
  if (pasts.empty())
    return fail("it has no past_key_values.N.key/.value inputs");

  int32_t numLayers = (int32_t)pasts.size();
  std::vector<int32_t> pastInputs, presentOutputs;
  for (int32_t layer = 0; layer < numLayers; ++layer) {
    std::string n = std::to_string(layer);
    auto past = pasts.find(layer);
    if (past == pasts.end() || past->second[0] < 0 || past->second[1] < 0)
      return fail("past_key_values." + n + ".key or .value is missing (the "
                  "layers must be numbered 0 to " + std::to_string(numLayers - 1) + ")");
    auto present = presents.find(layer);
    if (present == presents.end() || present->second[0] < 0 || present->second[1] < 0)
      return fail("output present." + n + ".key or .value is missing");
    for (int kv = 0; kv < 2; ++kv) {
      pastInputs.push_back(past->second[kv]);
      presentOutputs.push_back(present->second[kv]);
    }
  }
  if ((int32_t)presents.size() != numLayers)
    return fail("it has " + std::to_string(presents.size()) + " layers of "
                "present outputs but " + std::to_string(numLayers) + " of past inputs");

  DecoderShape shape;
  shape.numLayers = numLayers;
  kiln_io_info_t first;
  kiln_model_input_info(model, pastInputs[0], &first);
  shape.numKvHeads = (int32_t)first.dims[1].size;
  shape.headDim = (int32_t)first.dims[3].size;
  for (int32_t input : pastInputs) {
    kiln_model_input_info(model, input, &info);
    if (info.dims[1].size != shape.numKvHeads || info.dims[3].size != shape.headDim)
      return fail("input '" + std::string(info.name) + "' is " + describe(info) +
                  " but '" + first.name + "' is " + describe(first) +
                  ": every layer must have the same kv_heads and head_dim");
  }
  kiln_model_output_info(model, logits, &info);
  shape.vocabSize = (int32_t)info.dims[2].size;

  kiln_io_info_t ids, mask;
  kiln_model_input_info(model, inputIds, &ids);
  kiln_model_input_info(model, attentionMask, &mask);
  if (ids.dims[0].min > 1 || ids.dims[1].min > 1 || first.dims[2].min > 0)
    return fail("its bounds must allow batch 1, sequence 1 and past_sequence 0 "
                "(input_ids is " + describe(ids) + " with batch >= " +
                std::to_string(ids.dims[0].min) + ", sequence >= " +
                std::to_string(ids.dims[1].min) + ", past_sequence >= " +
                std::to_string(first.dims[2].min) + ")");
  shape.maxBatch = ids.dims[0].max;
  shape.maxSequence = ids.dims[1].max;
  shape.maxModelLen = std::min(mask.dims[1].max, first.dims[2].max + 1);

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
  runner->pastInputs_ = std::move(pastInputs);
  runner->presentOutputs_ = std::move(presentOutputs);
  runner->pasts_.resize(2 * numLayers);
  return runner;
}

ModelRunner::~ModelRunner() { kiln_session_release(session_); }

size_t ModelRunner::blockBytes(int32_t blockSize) const {
  return (size_t)shape_.numLayers * 2 * shape_.numKvHeads * blockSize *
         shape_.headDim * sizeof(float);
}

void ModelRunner::allocateCache(int32_t numBlocks, int32_t blockSize) {
  blockSize_ = blockSize;
  cache_.assign(blockBytes(blockSize) / sizeof(float) * numBlocks, 0.0f);
}

float *ModelRunner::cacheAt(BlockId block, int32_t layer, int32_t kv,
                            int32_t head, int32_t slot) {
  size_t index = (((size_t)block * shape_.numLayers + layer) * 2 + kv);
  index = (index * shape_.numKvHeads + head) * blockSize_ + slot;
  return cache_.data() + index * shape_.headDim;
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

void ModelRunner::scatterPresents(const std::vector<const ScheduledRequest *> &group,
                                  int64_t past, int64_t newTokens) {
  const int32_t heads = shape_.numKvHeads, dim = shape_.headDim;
  const int64_t total = past + newTokens;
  for (int32_t layer = 0; layer < shape_.numLayers; ++layer)
    for (int32_t kv = 0; kv < 2; ++kv) {
      kiln_tensor_t present;
      kiln_session_output(session_, presentOutputs_[layer * 2 + kv], &present);
      const float *data = static_cast<const float *>(present.data);
      for (size_t i = 0; i < group.size(); ++i) {
        const Request &request = *group[i]->request;
        int32_t start = request.numComputedTokens;
        for (int32_t head = 0; head < heads; ++head) {
          const float *rows = data + ((i * heads + head) * total + past) * dim;
          for (int32_t t = 0; t < newTokens;) {
            int32_t token = start + t;
            int32_t slot = token % blockSize_;
            int32_t run = std::min<int64_t>(blockSize_ - slot, newTokens - t);
            std::memcpy(cacheAt(request.blocks[token / blockSize_], layer, kv,
                                head, slot),
                        rows + (size_t)t * dim, sizeof(float) * run * dim);
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
  bind(positionIds_, KILN_DTYPE_I64, {batch, newTokens}, positions_.data(),
       positions_.size() * sizeof(int64_t));
  bind(attentionMask_, KILN_DTYPE_I64, {batch, total}, mask_.data(),
       mask_.size() * sizeof(int64_t));
  for (size_t p = 0; p < pastInputs_.size(); ++p)
    bind(pastInputs_[p], KILN_DTYPE_F32,
         {batch, shape_.numKvHeads, past, shape_.headDim}, pasts_[p].data(),
         sizeof(float) * batch * shape_.numKvHeads * past * shape_.headDim);
  if (error.empty())
    error = takeMessage(kiln_session_run(session_));
  if (!error.empty())
    return error;

  scatterPresents(group, past, newTokens);
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
                     std::vector<float> &logits) {
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

  // Rows come out in group order; put them back in `scheduled` order.
  std::vector<std::string> errors(scheduled.size());
  std::vector<const float *> rowOf(scheduled.size(), nullptr);
  std::vector<std::vector<float>> rowsByGroup(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    std::string error = runGroup(groups[g], rowsByGroup[g]);
    size_t row = 0;
    for (const ScheduledRequest *s : groups[g]) {
      size_t index = s - scheduled.data();
      if (!error.empty())
        errors[index] = error;
      else if (s->samples)
        rowOf[index] = rowsByGroup[g].data() + (row++) * shape_.vocabSize;
    }
  }
  logits.clear();
  for (size_t i = 0; i < scheduled.size(); ++i)
    if (rowOf[i])
      logits.insert(logits.end(), rowOf[i], rowOf[i] + shape_.vocabSize);
  return errors;
}

} // namespace kiln::engine
