import CSystemShims

/// Hands the heap's free pages back to the system (glibc's `malloc_trim(0)`), which glibc otherwise
/// keeps for reuse: after a family let 10,000 members go, the process's resident memory then falls to
/// about what is still in use (docs/benchmarks.md, issue 38).
public enum HeapTrim {
    /// - Complexity: O(the heap's free chunks); called at most once per family sweep.
    public static func release() {
        diffstream_malloc_trim()
    }
}
