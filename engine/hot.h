/*
 * This file is private to tensorverbs' engine: TV__INLINE_HOT, for the
 * few small functions a 64-byte fetch runs through.  Under emulation (TCG,
 * the rxe VM) every call into another code page and every return is a
 * translation-cache lookup, 50-90 ns each (docs/rxe-runs.md, session 10);
 * LTO's size heuristics left these as calls.
 */
#ifndef TV_ENGINE_HOT_H
#define TV_ENGINE_HOT_H

#define TV__INLINE_HOT inline __attribute__((always_inline))

#endif /* TV_ENGINE_HOT_H */
