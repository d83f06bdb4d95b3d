// Compiled only to produce the precompiled header that every baton target reuses.
