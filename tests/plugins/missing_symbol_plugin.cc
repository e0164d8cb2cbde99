// A bad plugin for tests: needs a function nothing defines, so loading must
// fail naming the symbol.
extern "C" int tfm_test_symbol_that_does_not_exist();

namespace {
const int kValue = tfm_test_symbol_that_does_not_exist();
}  // namespace
