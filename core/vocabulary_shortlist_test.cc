#include "core/vocabulary_shortlist.h"

#include <vector>

#include "gtest/gtest.h"

namespace tfm {
namespace {

// Frequent targets, then each source token's best, cut to the counts asked
// for; the union is sorted and has no duplicates.
TEST(VocabularyShortlistTest, CandidatesAreTheFrequentAndEachSourceTokensBest) {
  absl::StatusOr<VocabularyShortlist> shortlist = VocabularyShortlist::Create(
      20, /*frequent=*/{7, 5, 9}, /*best=*/{{}, {12, 13, 14}, {13, 2}, {19}},
      /*frequent_count=*/2, /*best_count=*/2);
  ASSERT_TRUE(shortlist.ok()) << shortlist.status();
  EXPECT_EQ(shortlist->frequent_count(), 2);
  // Source 1 brings 12, 13 (not 14: cut), source 2 brings 13, 2; eos 3 is
  // always in; source 17 has no list and -1 is not a token.
  EXPECT_EQ(shortlist->Candidates({1, 2, 17, -1}, /*always=*/{3}),
            (std::vector<int32_t>{2, 3, 5, 7, 12, 13}));
  EXPECT_EQ(shortlist->Candidates({}, {}), (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(shortlist->Candidates({3, 3}, {}), (std::vector<int32_t>{5, 7, 19}));
}

TEST(VocabularyShortlistTest, IdsOutsideTheVocabularyAreErrors) {
  absl::StatusOr<VocabularyShortlist> bad_frequent =
      VocabularyShortlist::Create(10, {3, 10}, {}, 5, 5);
  ASSERT_FALSE(bad_frequent.ok());
  EXPECT_NE(bad_frequent.status().message().find("target id 10"), std::string::npos)
      << bad_frequent.status();
  absl::StatusOr<VocabularyShortlist> bad_best =
      VocabularyShortlist::Create(10, {}, {{1}, {2, -4}}, 5, 5);
  ASSERT_FALSE(bad_best.ok());
  EXPECT_NE(bad_best.status().message().find("source token 1"), std::string::npos)
      << bad_best.status();
  // Cut before the check: an id past best_count is never used.
  EXPECT_TRUE(VocabularyShortlist::Create(10, {}, {{1, 99}}, 5, 1).ok());
  EXPECT_FALSE(VocabularyShortlist::Create(10, {}, {}, -1, 5).ok());
}

}  // namespace
}  // namespace tfm
