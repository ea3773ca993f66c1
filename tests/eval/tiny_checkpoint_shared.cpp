// The tiny-checkpoint builder of the model tests, compiled into this binary too
// (each tests/<module> folder becomes its own executable).
#include "model/tiny_checkpoint.cpp"  // NOLINT(bugprone-suspicious-include)
