// Leaf and word tables for tests of models with
// leaf alignment that use small synthetic vocabularies
// instead of a tokenizer's pieces.
#ifndef TFM_TASKS_PARSING_LEAF_ALIGNMENT_TESTING_H_
#define TFM_TASKS_PARSING_LEAF_ALIGNMENT_TESTING_H_

#include "tasks/parsing/leaf_alignment.h"

namespace tfm {

// Every second id starts a word, every third a leaf: in a sequence of
// pseudo-random ids the leaf counts and the word positions move at
// different places, so a wrong alignment shows.
inline LeafAlignmentTables SyntheticLeafAlignment(int vocab_size) {
  LeafAlignmentTables tables;
  for (int id = 0; id < vocab_size; ++id) {
    tables.starts_word.push_back(id % 2 == 0);
    tables.starts_leaf.push_back(id % 3 == 0);
  }
  return tables;
}

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_LEAF_ALIGNMENT_TESTING_H_
