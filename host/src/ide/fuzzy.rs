//! Fuzzy ranking of completion candidates (spec §15.2: "Matching is fuzzy;
//! ties are stable and alphabetical").
//!
//! Two tiers. When some candidates start with the typed text, those are the
//! answer, alphabetically: a line editor then extends the word to their
//! longest common prefix, as a shell user expects. Only when none does are
//! the others scored as fuzzy subsequence matches (by `nucleo-matcher`, the
//! matcher of the helix editor: word starts, camel humps and adjacency
//! score higher, case is ignored unless the query has a capital), best
//! first, equal scores alphabetically.

use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// `items` that match `query`, best first (see the module docs); `key` is
/// the text an item is matched on. Duplicate keys are kept once.
pub fn rank_by<T>(query: &str, mut items: Vec<T>, key: impl Fn(&T) -> &str) -> Vec<T> {
    items.sort_by(|a, b| key(a).cmp(key(b)));
    items.dedup_by(|a, b| key(a) == key(b));
    if query.is_empty() {
        return items;
    }
    if items.iter().any(|i| key(i).starts_with(query)) {
        items.retain(|i| key(i).starts_with(query));
        return items;
    }
    let atom = Atom::new(
        query,
        CaseMatching::Smart,
        Normalization::Smart,
        AtomKind::Fuzzy,
        false,
    );
    let mut matcher = Matcher::new(Config::DEFAULT);
    let mut buf = Vec::new();
    let mut scored: Vec<(u16, T)> = items
        .into_iter()
        .filter_map(|i| {
            let score = atom.score(Utf32Str::new(key(&i), &mut buf), &mut matcher)?;
            Some((score, i))
        })
        .collect();
    // Stable: equal scores keep the alphabetical order of the input.
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    scored.into_iter().map(|(_, i)| i).collect()
}

/// [`rank_by`] over plain strings.
pub fn rank(query: &str, items: Vec<String>) -> Vec<String> {
    rank_by(query, items, |s| s.as_str())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn prefix_matches_win_and_are_alphabetical() {
        let r = rank("fo", owned(&["food", "xfoo", "foo", "bar", "foo"]));
        assert_eq!(r, owned(&["foo", "food"]));
    }

    #[test]
    fn fuzzy_when_no_prefix_matches() {
        let r = rank(
            "gtc",
            owned(&["git-commit", "echo", "go", "gcov-tool", "get-cwd"]),
        );
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r.contains(&"git-commit".to_owned()), "{r:?}");
        assert!(r.contains(&"get-cwd".to_owned()), "{r:?}");
    }

    #[test]
    fn equal_scores_are_alphabetical() {
        let r = rank("x", owned(&["bx", "ax", "cx"]));
        assert_eq!(r, owned(&["ax", "bx", "cx"]));
    }

    #[test]
    fn an_empty_query_lists_everything_sorted() {
        assert_eq!(rank("", owned(&["b", "a"])), owned(&["a", "b"]));
    }
}
