// The C API is declared in include/provideo.h and implemented in Swift (Sources/ProVideoC).
