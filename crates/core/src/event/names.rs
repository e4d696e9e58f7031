//! The event names each agent uses in its hook configuration, for the
//! hook's typo hint (`--event SessionStrat` → "did you mean SessionStart?").
//! They are read from the installer's own profiles
//! (`installers/agents.toml`, embedded), so there is one list to keep, and
//! only when a hook meets a name it does not know.

use serde::Deserialize;

/// The installer's profiles: the one place each agent's event names live.
const PROFILES_TOML: &str = include_str!("../../../../installers/agents.toml");

#[derive(Deserialize)]
struct Profiles {
    agent: Vec<Profile>,
}

/// What the hint needs of a profile (the rest is the installer's).
#[derive(Deserialize)]
struct Profile {
    id: String,
    /// `[native event, memhook event]`, in the order they are written.
    events: Vec<[String; 2]>,
}

/// The native event names of `agent`, or every agent's when it has no
/// profile, in the order the installer writes them.
pub fn native_events(agent: &str) -> Vec<String> {
    let profiles: Profiles = match toml::from_str(PROFILES_TOML) {
        Ok(p) => p,
        // Checked by a unit test; a hint is never worth a failure.
        Err(_) => return Vec::new(),
    };
    let own = profiles.agent.iter().any(|p| p.id == agent);
    profiles
        .agent
        .into_iter()
        .filter(|p| !own || p.id == agent)
        .flat_map(|p| p.events.into_iter().map(|[native, _]| native))
        .collect()
}

/// The native event name of `agent` (every agent's, when it has no
/// profile) nearest to `name` by edit distance on the folded spelling, if it
/// is near enough to be a typo: at most a third of the name's letters, and
/// at least 2.
pub fn closest_event(agent: &str, name: &str) -> Option<String> {
    let folded = super::fold_name(name);
    let (distance, best) = native_events(agent)
        .into_iter()
        .map(|e| (strsim::levenshtein(&super::fold_name(&e), &folded), e))
        .min_by_key(|(d, _)| *d)?;
    (distance <= (folded.len() / 3).max(2)).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_event_finds_the_agents_own_name() {
        assert_eq!(
            closest_event("claude-code", "UserPromtSubmit").as_deref(),
            Some("UserPromptSubmit")
        );
        assert_eq!(
            closest_event("claude-code", "pre_tool_us").as_deref(),
            Some("PreToolUse")
        );
        assert_eq!(
            closest_event("gemini-cli", "BeforeAgnet").as_deref(),
            Some("BeforeAgent")
        );
        // No profile: every agent's names are candidates.
        assert_eq!(
            closest_event("my-agent", "SesionEnd").as_deref(),
            Some("SessionEnd")
        );
        // Nothing near: no guess.
        assert_eq!(closest_event("claude-code", "Deploy").as_deref(), None);
    }

    #[test]
    fn the_embedded_profiles_name_every_agents_events() {
        let profiles: Profiles = toml::from_str(PROFILES_TOML).unwrap();
        assert!(profiles.agent.len() >= 8);
        for p in &profiles.agent {
            let own = native_events(&p.id);
            assert!(!own.is_empty(), "{}", p.id);
            assert_eq!(own.len(), p.events.len(), "{}", p.id);
        }
        let all = native_events("my-agent");
        assert_eq!(
            all.len(),
            profiles.agent.iter().map(|p| p.events.len()).sum::<usize>()
        );
    }
}
