// The epoll runtime is Linux-only (epoll and eventfd), and so is every product built on it; the
// package's Apple platforms are the client products' (see Package.swift). A build elsewhere stops
// here with one line instead of a page of missing symbols.
#if !os(Linux)
#error("HTTPServer (the epoll runtime) and the server products are Linux-only; on Apple systems use DiffStream, DiffStreamJSON and DiffStreamClient")
#endif
