// The translation unit that builds the LibTorch precompiled header (trainer/CMakeLists.txt,
// fanout_use_torch_pch); it has no code of its own.
