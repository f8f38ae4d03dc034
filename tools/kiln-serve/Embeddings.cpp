#include "Embeddings.h"

#include <algorithm>
#include <cstring>
#include <future>

namespace kiln::serve {

namespace {

// The output to pool: the one named last_hidden_state, or else the only
// one of rank 3.
int32_t hiddenStatesOutput(const kiln::Model &model) {
  int32_t found = kiln_model_find_output(model.get(), "last_hidden_state");
  if (found >= 0)
    return found;
  for (int32_t i = 0; i < model.outputCount(); ++i) {
    kiln_io_info_t info = model.output(i);
    if (info.rank == 3 && info.dtype == KILN_DTYPE_F32)
      found = found == -1 ? i : -2;
  }
  if (found < 0)
    throw kiln::Error(KILN_STATUS_INVALID_ARGUMENT,
                      "the encoder has no output to pool: expected 'last_hidden_state' or one "
                      "f32 output of rank 3 [batch, sequence, hidden]");
  return found;
}

} // namespace

bool isEncoder(const kiln::Model &model) {
  return kiln_model_find_output(model.get(), "logits") < 0;
}

Embedder::Embedder(const kiln::Model &model, Pooling pooling, int64_t maxQueueDelayUs)
    : model_(model), pooling_(pooling), batcher_(model, 0, maxQueueDelayUs),
      output_(hiddenStatesOutput(model)) {
  for (int32_t i = 0; i < model.inputCount(); ++i) {
    kiln_io_info_t info = model.input(i);
    std::string name = info.name;
    if (name != "input_ids" && name != "attention_mask" && name != "token_type_ids")
      throw kiln::Error(KILN_STATUS_INVALID_ARGUMENT,
                        "the encoder's input '" + name +
                            "' is none of input_ids, attention_mask and token_type_ids");
    if (info.dtype != KILN_DTYPE_I64 || info.rank != 2)
      throw kiln::Error(KILN_STATUS_INVALID_ARGUMENT,
                        "the encoder's input '" + name + "' is not int64 [batch, sequence]");
    inputs_.push_back(name);
  }
  if (std::find(inputs_.begin(), inputs_.end(), "input_ids") == inputs_.end())
    throw kiln::Error(KILN_STATUS_INVALID_ARGUMENT, "the encoder has no input 'input_ids'");
}

Json Embedder::embed(const Json &body, const ServedModel &served) {
  if (!body.is_object())
    throw ApiError(400, "the body must be a JSON object");
  if (auto model = body.find("model"); model != body.end() && !model->is_null() &&
                                       (!model->is_string() || model->get<std::string>() != served.name))
    throw ApiError(404, "The model `" + model->dump() + "` does not exist; this server serves `" +
                            served.name + "`",
                   "model", "NotFoundError");
  if (auto format = body.find("encoding_format");
      format != body.end() && !format->is_null() && *format != "float")
    throw ApiError(400, "encoding_format: only \"float\" is supported", "encoding_format");
  if (auto dimensions = body.find("dimensions"); dimensions != body.end() && !dimensions->is_null())
    throw ApiError(400, "dimensions is not supported: the model's width is fixed", "dimensions");

  // input: a string, a list of strings, a list of ids, or a list of lists
  // of ids, as OpenAI allows.
  auto input = body.find("input");
  if (input == body.end() || input->is_null())
    throw ApiError(400, "input is required", "input");
  std::vector<std::vector<int64_t>> sequences;
  auto add = [&](const Json &item) {
    std::vector<int64_t> ids;
    if (item.is_string()) {
      if (!served.tokenizer)
        throw ApiError(400, "a text input needs a tokenizer: start kiln-serve with --tokenizer, "
                            "or give token ids", "input");
      for (int32_t id : served.tokenizer->encode(item.get<std::string>()))
        ids.push_back(id);
    } else if (item.is_array()) {
      for (const Json &id : item) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= served.vocabSize)
          throw ApiError(400, "input holds " + id.dump() + ", which is not a token id of this model",
                         "input");
        ids.push_back(id.get<int64_t>());
      }
    } else {
      throw ApiError(400, "input must be a string, a list of strings, a list of token ids or a "
                          "list of lists of token ids", "input");
    }
    if (ids.empty())
      throw ApiError(400, "input holds an empty text or list", "input");
    if ((int64_t)ids.size() > served.maxModelLen)
      throw ApiError(400, "input has " + std::to_string(ids.size()) +
                              " tokens; the model takes " + std::to_string(served.maxModelLen) +
                              " at most", "input");
    sequences.push_back(std::move(ids));
  };
  if (input->is_string() || (input->is_array() && !input->empty() && (*input)[0].is_number()))
    add(*input);
  else if (input->is_array() && !input->empty())
    for (const Json &item : *input)
      add(item);
  else
    add(*input);

  // Every input is a request of its own; the batcher pads and batches them.
  std::vector<std::future<std::vector<kiln::DynamicBatcher::Output>>> answers;
  size_t promptTokens = 0;
  for (const std::vector<int64_t> &ids : sequences) {
    promptTokens += ids.size();
    int64_t shape[2] = {1, (int64_t)ids.size()};
    std::vector<int64_t> ones(ids.size(), 1), zeros(ids.size(), 0);
    std::vector<kiln_tensor_t> tensors;
    for (const std::string &name : inputs_) {
      const std::vector<int64_t> &data =
          name == "input_ids" ? ids : name == "attention_mask" ? ones : zeros;
      kiln_tensor_t tensor = {};
      tensor.dtype = KILN_DTYPE_I64;
      tensor.rank = 2;
      tensor.shape = shape;
      tensor.data = const_cast<int64_t *>(data.data());
      tensor.byte_size = data.size() * sizeof(int64_t);
      tensors.push_back(tensor);
    }
    try {
      answers.push_back(batcher_.submit(tensors));
    } catch (const kiln::Error &e) {
      throw ApiError(400, std::string("the encoder refused an input: ") + e.what(), "input");
    }
  }
  Json data = Json::array();
  for (size_t i = 0; i < answers.size(); ++i) {
    std::vector<kiln::DynamicBatcher::Output> outputs;
    try {
      outputs = answers[i].get();
    } catch (const kiln::Error &e) {
      throw ApiError(500, std::string("the encoder failed: ") + e.what(), "", "internal_server_error");
    }
    const kiln::DynamicBatcher::Output &hidden = outputs[output_];
    int64_t tokens = hidden.shape[1], width = hidden.shape[2];
    const float *states = hidden.as<float>();
    std::vector<float> vector(width, 0.0f);
    if (pooling_ == Pooling::First) {
      std::memcpy(vector.data(), states, width * sizeof(float));
    } else {
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t h = 0; h < width; ++h)
          vector[h] += states[t * width + h];
      for (float &value : vector)
        value /= (float)tokens;
    }
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", vector}});
  }
  return {{"object", "list"},
          {"data", data},
          {"model", served.name},
          {"usage", {{"prompt_tokens", promptTokens}, {"total_tokens", promptTokens}}}};
}

} // namespace kiln::serve
