// The ternary dictionary codec, everything in one include: dictionary builders
// (qmoe, tunstall), grid rounding, trie encoder, reference decoders, validation,
// ledger and dictionary serialization. The byte layout is ternary_dict_format.h;
// the specification is docs/format.md.
#pragma once

#include "submoe/codec/ternary_dict_format.h"
#include "submoe/codec/ternary_dict_serialization.h"
#include "submoe/codec/ternary_dictionary.h"
#include "submoe/codec/ternary_grid.h"
#include "submoe/codec/ternary_ledger.h"
#include "submoe/codec/ternary_packed.h"
