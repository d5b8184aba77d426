/// Marks the members of one longest strictly increasing subsequence of `values`.
///
/// Used to find the largest set of elements that can stay where they are: everything outside it is
/// moved, which makes the number of moves minimal. Among equally long subsequences the choice is
/// deterministic (patience sorting, taking the earliest tail on ties).
///
/// - Returns: a flag per element, `true` for the members of the subsequence.
/// - Complexity: O(n log n) time, O(n) memory.
@usableFromInline
func longestIncreasingSubsequenceMembers(_ values: [Int]) -> [Bool] {
    let count = values.count
    var members = [Bool](repeating: false, count: count)
    if count == 0 { return members }
    // tails[k]: the index in `values` of the smallest tail of an increasing run of length k + 1.
    var tails: [Int] = []
    tails.reserveCapacity(min(count, 1024))
    var previous = [Int](repeating: -1, count: count)
    values.withUnsafeBufferPointer { values in
        for index in 0..<count {
            let value = values[index]
            if let last = tails.last, values[last] < value {
                previous[index] = last
                tails.append(index)
                continue
            }
            // Binary search for the first tail whose value is >= value.
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) >> 1
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
    }
    var cursor = tails.last ?? -1
    while cursor >= 0 {
        members[cursor] = true
        cursor = previous[cursor]
    }
    return members
}
