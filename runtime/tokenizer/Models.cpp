//===- Models.cpp - tokenizer.json "model" types ----------------------------===//
//
// BPE, WordPiece, WordLevel and Unigram, each turning one pre-tokenized word
// into ids as the Rust library does.
//
//===----------------------------------------------------------------------===//
#include "Components.h"

#include "TokenizerError.h"
#include "Unicode.h"

#include <cstdio>
#include <mutex>
#include <queue>
#include <unordered_map>

namespace kiln::tok {

namespace {

// token <-> id. The map's keys view the strings in `tokens_`, which never move
// after loading (a move of the whole vocabulary keeps them where they are; a
// copy would not, so there is none).
class Vocabulary {
public:
  /// From {"token": id, ...}, as BPE, WordPiece and WordLevel give it.
  Vocabulary(const Json &vocab, const JsonPath &path) {
    if (!vocab.is_object())
      throw TokenizerError(path.text + ": expected an object of token: id");
    int64_t maxId = -1;
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
          it.value().get<int64_t>() > INT32_MAX)
        throw TokenizerError(path.text + "[\"" + it.key() + "\"]: expected an id in [0, 2^31)");
      maxId = std::max(maxId, it.value().get<int64_t>());
    }
    tokens_.resize((size_t)(maxId + 1));
    present_.assign((size_t)(maxId + 1), false);
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      int32_t id = (int32_t)it.value().get<int64_t>();
      if (present_[id])
        throw TokenizerError(path.text + ": id " + std::to_string(id) +
                             " is given to both '" + tokens_[id] + "' and '" +
                             it.key() + "'");
      tokens_[id] = it.key();
      present_[id] = true;
    }
    index();
  }
  /// From the tokens in id order, as Unigram gives them. A token listed
  /// twice is found under its last id, as in the Rust library.
  explicit Vocabulary(std::vector<std::string> tokens)
      : tokens_(std::move(tokens)), present_(tokens_.size(), true) {
    index();
  }
  Vocabulary(Vocabulary &&) = default;
  Vocabulary(const Vocabulary &) = delete;

  std::optional<int32_t> find(std::string_view token) const {
    auto it = ids_.find(token);
    if (it == ids_.end())
      return std::nullopt;
    return it->second;
  }
  const std::string *token(int32_t id) const {
    if (id < 0 || (size_t)id >= tokens_.size() || !present_[id])
      return nullptr;
    return &tokens_[id];
  }
  int32_t size() const { return (int32_t)tokens_.size(); }
  /// The byte length of the longest token.
  size_t longest() const { return longest_; }

private:
  void index() {
    ids_.reserve(tokens_.size());
    for (size_t id = 0; id < tokens_.size(); ++id)
      if (present_[id]) {
        ids_[tokens_[id]] = (int32_t)id;
        longest_ = std::max(longest_, tokens_[id].size());
      }
  }

  size_t longest_ = 0;
  std::vector<std::string> tokens_;
  std::vector<bool> present_;
  std::unordered_map<std::string_view, int32_t> ids_;
};

std::optional<std::string> optionalString(const Json &config, const char *key,
                                          const JsonPath &path) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null())
    return std::nullopt;
  if (!it->is_string())
    throw TokenizerError((path / key).text + ": expected a string or null");
  return it->get<std::string>();
}

// The id of the model's unknown token; it must be in the vocabulary.
std::optional<int32_t> unknownId(const Vocabulary &vocab, const Json &config,
                                 const JsonPath &path) {
  std::optional<std::string> unk = optionalString(config, "unk_token", path);
  if (!unk)
    return std::nullopt;
  std::optional<int32_t> id = vocab.find(*unk);
  if (!id)
    throw TokenizerError((path / "unk_token").text + ": '" + *unk +
                         "' is not in the vocabulary");
  return id;
}

// Word -> ids memo shared by the models whose word work is costly (BPE's
// merges, WordPiece's longest-match search). Like the Rust library's, a full
// cache stops taking words rather than evicting: the common words arrive
// first. Locked, so one model serves many threads.
class WordCache {
public:
  template <typename Compute>
  void tokenize(std::string_view word, std::vector<int32_t> &ids, const Compute &compute) const {
    if (word.size() >= kMaxWordBytes) {
      compute(word, ids);
      return;
    }
    std::string key(word);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = words_.find(key);
      if (it != words_.end()) {
        ids.insert(ids.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    size_t first = ids.size();
    compute(word, ids);
    std::lock_guard<std::mutex> lock(mutex_);
    if (words_.size() < kCapacity)
      words_.emplace(std::move(key), std::vector<int32_t>(ids.begin() + first, ids.end()));
  }

private:
  static constexpr size_t kMaxWordBytes = 256;
  static constexpr size_t kCapacity = 10000;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> words_;
};

// The token <-> id half of a model, the same for every kind.
class VocabularyModel : public Model {
public:
  explicit VocabularyModel(Vocabulary vocab) : vocab_(std::move(vocab)) {}
  /// The {"token": id} map at the config's "vocab".
  VocabularyModel(const Json &config, const JsonPath &path)
      : vocab_(field(config, "vocab", path), path / "vocab") {}
  std::optional<int32_t> tokenToId(std::string_view token) const override {
    return vocab_.find(token);
  }
  const std::string *idToToken(int32_t id) const override { return vocab_.token(id); }
  int32_t vocabSize() const override { return vocab_.size(); }

protected:
  Vocabulary vocab_;
};

// SentencePiece's byte pieces "<0x00>".."<0xFF>", which stand for the bytes
// of text no piece covers when a model has byte_fallback.
class BytePieces {
public:
  explicit BytePieces(const Vocabulary &vocab) {
    for (int byte = 0; byte < 256; ++byte) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", byte);
      ids_[byte] = vocab.find(name).value_or(-1);
    }
  }
  /// Appends the pieces of `text`'s bytes; false, appending nothing, when
  /// the vocabulary lacks one of them.
  bool append(std::string_view text, std::vector<int32_t> &ids) const {
    for (unsigned char byte : text)
      if (ids_[byte] < 0)
        return false;
    for (unsigned char byte : text)
      ids.push_back(ids_[byte]);
    return true;
  }

private:
  int32_t ids_[256];
};

class Bpe : public VocabularyModel {
public:
  Bpe(const Json &config, const JsonPath &path)
      : VocabularyModel(config, path), unk_(unknownId(vocab_, config, path)),
        prefix_(optionalString(config, "continuing_subword_prefix", path).value_or("")),
        suffix_(optionalString(config, "end_of_word_suffix", path).value_or("")),
        fuseUnk_(boolField(config, "fuse_unk", false, path)),
        ignoreMerges_(boolField(config, "ignore_merges", false, path)) {
    auto dropout = config.find("dropout");
    if (dropout != config.end() && !dropout->is_null() && dropout->get<double>() > 0.0)
      throw TokenizerError((path / "dropout").text +
                           ": BPE dropout is for training; inference takes none");
    if (boolField(config, "byte_fallback", false, path))
      bytePieces_.emplace(vocab_);
    loadMerges(field(config, "merges", path), path / "merges");
  }

  void tokenize(std::string_view word, std::vector<int32_t> &ids) const override {
    if (ignoreMerges_)
      if (std::optional<int32_t> id = vocab_.find(word)) {
        ids.push_back(*id);
        return;
      }
    cache_.tokenize(word, ids, [this](std::string_view w, std::vector<int32_t> &out) {
      merge(w, out);
    });
  }

private:
  struct MergeResult {
    int32_t rank;
    int32_t id;
  };
  static uint64_t pairKey(int32_t left, int32_t right) {
    return ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
  }

  void loadMerges(const Json &merges, const JsonPath &path) {
    if (!merges.is_array())
      throw TokenizerError(path.text + ": expected a list");
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const Json &merge = merges[rank];
      std::string left, right;
      if (merge.is_string()) {
        // "left right": the older form, whose tokens hold no space.
        const std::string &text = merge.get_ref<const std::string &>();
        size_t space = text.find(' ');
        if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
          throw TokenizerError(path[rank].text + ": expected 'left right', got '" + text + "'");
        left = text.substr(0, space);
        right = text.substr(space + 1);
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
                 merge[1].is_string()) {
        left = merge[0].get<std::string>();
        right = merge[1].get<std::string>();
      } else {
        throw TokenizerError(path[rank].text + ": expected \"left right\" or [left, right]");
      }
      std::optional<int32_t> leftId = vocab_.find(left), rightId = vocab_.find(right);
      if (!leftId || !rightId)
        throw TokenizerError(path[rank].text + ": '" + (leftId ? right : left) +
                             "' is not in the vocabulary");
      std::string merged = left;
      merged += right.compare(0, prefix_.size(), prefix_) == 0 ? right.substr(prefix_.size())
                                                               : right;
      std::optional<int32_t> mergedId = vocab_.find(merged);
      if (!mergedId)
        throw TokenizerError(path[rank].text + ": the merge makes '" + merged +
                             "', which is not in the vocabulary");
      // A repeated pair keeps its first (best) rank.
      merges_.emplace(pairKey(*leftId, *rightId), MergeResult{(int32_t)rank, *mergedId});
    }
  }

  struct Symbol {
    int32_t id;
    int32_t previous; // -1 at the start
    int32_t next;     // -1 at the end
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t position;
    int32_t id;
    // std::priority_queue is a max-heap: the lowest rank, then the leftmost
    // position, comes out first.
    bool operator<(const Candidate &other) const {
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };

  // The word's characters as initial symbols: vocabulary entries, byte
  // fallbacks, or the unknown token (runs of unknowns fused when asked).
  void initialSymbols(std::string_view word, std::vector<int32_t> &symbols) const {
    std::optional<size_t> pendingUnknown; // index of an unknown to fuse into
    std::string piece;
    for (size_t pos = 0, length; pos < word.size(); pos += length) {
      length = utf8Length((unsigned char)word[pos]);
      piece.clear();
      if (pos > 0)
        piece += prefix_;
      piece.append(word.substr(pos, length));
      if (pos + length >= word.size())
        piece += suffix_;
      if (std::optional<int32_t> id = vocab_.find(piece)) {
        symbols.push_back(*id);
        pendingUnknown.reset();
        continue;
      }
      if (bytePieces_ && bytePieces_->append(piece, symbols)) {
        pendingUnknown.reset();
        continue;
      }
      // Without an unknown token the character is dropped, as in the Rust
      // library.
      if (!unk_)
        continue;
      if (fuseUnk_ && pendingUnknown)
        continue;
      symbols.push_back(*unk_);
      pendingUnknown = symbols.size() - 1;
    }
  }

  void merge(std::string_view word, std::vector<int32_t> &ids) const {
    std::vector<int32_t> initial;
    initialSymbols(word, initial);
    int32_t count = (int32_t)initial.size();
    if (count <= 1) {
      ids.insert(ids.end(), initial.begin(), initial.end());
      return;
    }
    std::vector<Symbol> symbols(count);
    for (int32_t i = 0; i < count; ++i)
      symbols[i] = {initial[i], i - 1, i + 1 < count ? i + 1 : -1, true};
    std::priority_queue<Candidate> queue;
    auto consider = [&](int32_t left) {
      if (left < 0 || symbols[left].next < 0)
        return;
      auto it = merges_.find(pairKey(symbols[left].id, symbols[symbols[left].next].id));
      if (it != merges_.end())
        queue.push({it->second.rank, left, it->second.id});
    };
    for (int32_t i = 0; i + 1 < count; ++i)
      consider(i);
    while (!queue.empty()) {
      Candidate top = queue.top();
      queue.pop();
      Symbol &left = symbols[top.position];
      if (!left.alive || left.next < 0)
        continue;
      // Stale when either side has merged since the candidate was queued.
      auto it = merges_.find(pairKey(left.id, symbols[left.next].id));
      if (it == merges_.end() || it->second.id != top.id || it->second.rank != top.rank)
        continue;
      Symbol &right = symbols[left.next];
      left.id = top.id;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0)
        symbols[right.next].previous = top.position;
      consider(left.previous);
      consider(top.position);
    }
    for (int32_t i = 0; i >= 0; i = symbols[i].next)
      ids.push_back(symbols[i].id);
  }

  std::optional<int32_t> unk_;
  std::string prefix_, suffix_;
  bool fuseUnk_, ignoreMerges_;
  std::optional<BytePieces> bytePieces_; // with byte_fallback
  std::unordered_map<uint64_t, MergeResult> merges_;
  WordCache cache_;
};

// Greedy longest-match-first, as BERT does.
class WordPiece : public VocabularyModel {
public:
  WordPiece(const Json &config, const JsonPath &path)
      : VocabularyModel(config, path),
        prefix_(optionalString(config, "continuing_subword_prefix", path).value_or("##")),
        maxChars_(config.contains("max_input_chars_per_word")
                      ? intField(config, "max_input_chars_per_word", path)
                      : 100) {
    std::optional<int32_t> unk = unknownId(vocab_, config, path);
    if (!unk)
      throw TokenizerError((path / "unk_token").text + ": WordPiece needs an unknown token");
    unk_ = *unk;
  }

  void tokenize(std::string_view word, std::vector<int32_t> &ids) const override {
    cache_.tokenize(word, ids, [this](std::string_view w, std::vector<int32_t> &out) {
      longestMatches(w, out);
    });
  }

private:
  void longestMatches(std::string_view word, std::vector<int32_t> &ids) const {
    int64_t chars = 0;
    for (unsigned char byte : word)
      chars += (byte & 0xC0) != 0x80;
    if (chars > maxChars_) {
      ids.push_back(unk_);
      return;
    }
    size_t first = ids.size();
    std::string candidate;
    for (size_t start = 0; start < word.size();) {
      // No candidate longer than the longest token can match.
      size_t prefixBytes = start > 0 ? prefix_.size() : 0;
      size_t end = word.size();
      if (vocab_.longest() < prefixBytes + (end - start)) {
        end = start + (vocab_.longest() > prefixBytes ? vocab_.longest() - prefixBytes : 0);
        while (end > start && ((unsigned char)word[end] & 0xC0) == 0x80)
          --end;
      }
      std::optional<int32_t> found;
      while (end > start) {
        candidate.assign(start > 0 ? prefix_ : std::string());
        candidate.append(word.substr(start, end - start));
        if ((found = vocab_.find(candidate)))
          break;
        do
          --end;
        while (end > start && ((unsigned char)word[end] & 0xC0) == 0x80);
      }
      if (!found) {
        ids.resize(first);
        ids.push_back(unk_);
        return;
      }
      ids.push_back(*found);
      start = end;
    }
  }

  std::string prefix_;
  int64_t maxChars_;
  int32_t unk_ = 0;
  WordCache cache_;
};

class WordLevel : public VocabularyModel {
public:
  WordLevel(const Json &config, const JsonPath &path)
      : VocabularyModel(config, path), unk_(unknownId(vocab_, config, path)) {}

  void tokenize(std::string_view word, std::vector<int32_t> &ids) const override {
    if (std::optional<int32_t> id = vocab_.find(word))
      ids.push_back(*id);
    else if (unk_)
      ids.push_back(*unk_);
    else
      throw TokenizerError("WordLevel model: '" + std::string(word) +
                           "' is not in the vocabulary and there is no unk_token");
  }

private:
  std::optional<int32_t> unk_;
};


// SentencePiece's unigram language model: of all the ways to cut a word into
// pieces, the one whose scores (log probabilities) add up to the most, found
// by Viterbi over the word's characters as the Rust library's
// encode_optimized does, ties going to the path found first. A character no
// piece covers costs the lowest score less 10 and stands for the unknown
// token; runs of them fuse into one, which byte_fallback spells as byte
// pieces instead.
class Unigram : public VocabularyModel {
public:
  Unigram(const Json &config, const JsonPath &path)
      : VocabularyModel(piecesOf(config, path)), scores_(scoresOf(config, path)) {
    double lowest = 0.0;
    for (size_t id = 0; id < scores_.size(); ++id) {
      lowest = id == 0 ? scores_[id] : std::min(lowest, scores_[id]);
      trie_.insert(*vocab_.token((int32_t)id), (int32_t)id);
    }
    unknownScore_ = lowest - 10.0;
    auto unk = config.find("unk_id");
    if (unk != config.end() && !unk->is_null()) {
      if (!unk->is_number_integer() || unk->get<int64_t>() < 0 ||
          unk->get<int64_t>() >= vocab_.size())
        throw TokenizerError((path / "unk_id").text + ": expected an index into the vocabulary (" +
                             std::to_string(vocab_.size()) + " pieces)");
      unk_ = unk->get<int32_t>();
    }
    if (boolField(config, "byte_fallback", false, path))
      bytePieces_.emplace(vocab_);
  }

  void tokenize(std::string_view word, std::vector<int32_t> &ids) const override {
    cache_.tokenize(word, ids, [this](std::string_view w, std::vector<int32_t> &out) {
      segment(w, out);
    });
  }

private:
  static Vocabulary piecesOf(const Json &config, const JsonPath &path) {
    const Json &vocab = field(config, "vocab", path);
    if (!vocab.is_array() || vocab.empty())
      throw TokenizerError((path / "vocab").text + ": expected a non-empty list of [piece, score]");
    std::vector<std::string> pieces;
    pieces.reserve(vocab.size());
    for (size_t id = 0; id < vocab.size(); ++id) {
      const Json &entry = vocab[id];
      if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() ||
          !entry[1].is_number())
        throw TokenizerError((path / "vocab")[id].text + ": expected [piece, score]");
      if (entry[0].get_ref<const std::string &>().empty())
        throw TokenizerError((path / "vocab")[id].text + ": the piece is empty");
      pieces.push_back(entry[0].get<std::string>());
    }
    return Vocabulary(std::move(pieces));
  }
  static std::vector<double> scoresOf(const Json &config, const JsonPath &path) {
    std::vector<double> scores;
    for (const Json &entry : field(config, "vocab", path))
      scores.push_back(entry[1].get<double>());
    return scores;
  }

  // The pieces as a byte trie, to find every piece that starts a text.
  class PieceTrie {
  public:
    void insert(std::string_view piece, int32_t id) {
      int32_t node = 0;
      for (unsigned char byte : piece) {
        auto [child, added] = children_.emplace(key(node, byte), (int32_t)pieceAt_.size());
        if (added)
          pieceAt_.push_back(-1);
        node = child->second;
      }
      pieceAt_[node] = id; // a repeated piece keeps its last id
    }
    /// Calls `found(length, id)` for each piece that `text` starts with,
    /// shortest first.
    template <typename Found>
    void forEachPrefix(std::string_view text, const Found &found) const {
      int32_t node = 0;
      for (size_t length = 1; length <= text.size(); ++length) {
        auto child = children_.find(key(node, (unsigned char)text[length - 1]));
        if (child == children_.end())
          return;
        node = child->second;
        if (pieceAt_[node] >= 0)
          found(length, pieceAt_[node]);
      }
    }

  private:
    static uint64_t key(int32_t node, unsigned char byte) {
      return ((uint64_t)(uint32_t)node << 8) | byte;
    }
    std::unordered_map<uint64_t, int32_t> children_;
    std::vector<int32_t> pieceAt_{-1}; // by node; the root holds none
  };

  void segment(std::string_view word, std::vector<int32_t> &ids) const {
    // best[end]: the best path over word[0, end) and its last piece.
    struct Best {
      double score = 0.0;
      int64_t start = -1; // -1: no path ends here yet
      int32_t id = 0;
    };
    std::vector<Best> best(word.size() + 1);
    auto offer = [&](size_t start, size_t end, int32_t id, double score) {
      double total = best[start].score + score;
      if (best[end].start < 0 || total > best[end].score)
        best[end] = {total, (int64_t)start, id};
    };
    for (size_t start = 0; start < word.size();) {
      size_t charLength = std::min(utf8Length((unsigned char)word[start]), word.size() - start);
      bool coversChar = false;
      trie_.forEachPrefix(word.substr(start), [&](size_t length, int32_t id) {
        offer(start, start + length, id, scores_[id]);
        coversChar = coversChar || length == charLength;
      });
      if (!coversChar) {
        if (!unk_)
          throw TokenizerError("Unigram model: '" + std::string(word.substr(start, charLength)) +
                               "' is not in the vocabulary and there is no unk_id");
        offer(start, start + charLength, *unk_, unknownScore_);
      }
      start += charLength;
    }
    // Walk back, fusing runs of unknowns, then emit in order.
    struct Cut {
      size_t start, end;
      int32_t id;
    };
    std::vector<Cut> cuts;
    for (size_t end = word.size(); end > 0;) {
      const Best &last = best[end];
      size_t start = (size_t)last.start;
      if (unk_ && last.id == *unk_ && !cuts.empty() && cuts.back().id == *unk_)
        cuts.back().start = start;
      else
        cuts.push_back({start, end, last.id});
      end = start;
    }
    for (auto cut = cuts.rbegin(); cut != cuts.rend(); ++cut) {
      if (!unk_ || cut->id != *unk_) {
        ids.push_back(cut->id);
        continue;
      }
      // An unknown run is looked up as text first, as the Rust library does.
      std::string_view text = word.substr(cut->start, cut->end - cut->start);
      if (std::optional<int32_t> id = vocab_.find(text))
        ids.push_back(*id);
      else if (!(bytePieces_ && bytePieces_->append(text, ids)))
        ids.push_back(*unk_);
    }
  }

  std::vector<double> scores_;
  double unknownScore_ = 0.0;
  std::optional<int32_t> unk_;
  std::optional<BytePieces> bytePieces_; // with byte_fallback
  PieceTrie trie_;
  WordCache cache_;
};

} // namespace

std::unique_ptr<Model> makeModel(const Json &config, const JsonPath &path) {
  if (!config.is_object())
    throw TokenizerError(path.text + ": missing");
  // Files of older versions leave the type out of a BPE model.
  std::string type = config.contains("type") ? stringField(config, "type", path)
                                              : std::string("BPE");
  if (type == "BPE")
    return std::make_unique<Bpe>(config, path);
  if (type == "WordPiece")
    return std::make_unique<WordPiece>(config, path);
  if (type == "WordLevel")
    return std::make_unique<WordLevel>(config, path);
  if (type == "Unigram")
    return std::make_unique<Unigram>(config, path);
  unsupported("model", type, path, "BPE, WordPiece, WordLevel and Unigram");
}

} // namespace kiln::tok
