//! Dollar cost of a run from its token usage, for the headless result's
//! `total_cost_usd`.
//!
//! A small static table of list prices (US dollars per million tokens),
//! matched by the longest model-name prefix. A model not in the table has
//! no cost (`None`, written as `null`): exarch does not guess. Prices
//! change; the table is a convenience, the token counts are the record.

use crate::message::Usage;

/// Per-million-token prices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

const fn p(input: f64, output: f64, cache_write: f64, cache_read: f64) -> Price {
    Price {
        input,
        output,
        cache_write,
        cache_read,
    }
}

/// (model prefix, price). Longer prefixes win.
const TABLE: &[(&str, Price)] = &[
    ("claude-opus-4-5", p(5.0, 25.0, 6.25, 0.50)),
    ("claude-opus-4", p(15.0, 75.0, 18.75, 1.50)),
    ("claude-sonnet-4", p(3.0, 15.0, 3.75, 0.30)),
    ("claude-3-7-sonnet", p(3.0, 15.0, 3.75, 0.30)),
    ("claude-3-5-sonnet", p(3.0, 15.0, 3.75, 0.30)),
    ("claude-haiku-4", p(1.0, 5.0, 1.25, 0.10)),
    ("claude-3-5-haiku", p(0.80, 4.0, 1.0, 0.08)),
    ("gpt-4.1-nano", p(0.10, 0.40, 0.0, 0.025)),
    ("gpt-4.1-mini", p(0.40, 1.60, 0.0, 0.10)),
    ("gpt-4.1", p(2.0, 8.0, 0.0, 0.50)),
    ("gpt-4o-mini", p(0.15, 0.60, 0.0, 0.075)),
    ("gpt-4o", p(2.50, 10.0, 0.0, 1.25)),
    ("gpt-5-nano", p(0.05, 0.40, 0.0, 0.005)),
    ("gpt-5-mini", p(0.25, 2.0, 0.0, 0.025)),
    ("gpt-5", p(1.25, 10.0, 0.0, 0.125)),
    ("o1", p(15.0, 60.0, 0.0, 7.50)),
    ("o1-mini", p(1.10, 4.40, 0.0, 0.55)),
    ("o3", p(2.0, 8.0, 0.0, 0.50)),
    ("o3-mini", p(1.10, 4.40, 0.0, 0.55)),
    ("o4-mini", p(1.10, 4.40, 0.0, 0.275)),
];

/// The price of `model`, if the table knows it (a `vendor/` prefix, as
/// routers spell models, is ignored).
pub fn price(model: &str) -> Option<Price> {
    let name = model.rsplit('/').next().unwrap_or(model);
    TABLE
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, p)| *p)
}

/// The cost of `usage` on `model`, in dollars.
pub fn cost(model: &str, usage: &Usage) -> Option<f64> {
    let p = price(model)?;
    let m = |n: u64, per: f64| n as f64 * per / 1_000_000.0;
    Some(
        m(usage.input_tokens, p.input)
            + m(usage.output_tokens, p.output)
            + m(usage.cache_creation_input_tokens, p.cache_write)
            + m(usage.cache_read_input_tokens, p.cache_read),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_unknown_models_cost_nothing_known() {
        assert_eq!(price("gpt-4.1-mini-2025").map(|p| p.input), Some(0.40));
        assert_eq!(price("openai/gpt-4.1").map(|p| p.input), Some(2.0));
        assert_eq!(
            price("claude-opus-4-5-20251101").map(|p| p.output),
            Some(25.0)
        );
        assert_eq!(price("claude-opus-4-1").map(|p| p.output), Some(75.0));
        assert_eq!(price("o3-mini").map(|p| p.input), Some(1.10));
        assert_eq!(price("o3").map(|p| p.input), Some(2.0));
        assert_eq!(cost("mystery-model", &Usage::default()), None);
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 1_000_000,
        };
        let c = cost("claude-sonnet-4-5", &u).unwrap_or_default();
        assert!((c - 18.30).abs() < 1e-9, "{c}");
    }
}
