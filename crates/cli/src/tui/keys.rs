//! What the dashboard's keys do, and the level a `+` or `-` asks for: pure, so table-tested.

use belier_engine::Knob;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// A step of `+` or `-`: 10 % of the level.
const STEP: f64 = 1.1;

/// What a key asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Stop the run (`q`, Ctrl-C: in raw mode Ctrl-C is a key, not SIGINT).
    Stop,
    /// Pause, or resume a paused run (`p`).
    Pause,
    /// Raise the level by 10 % (`+`, and `=`, its key without shift).
    Up,
    /// Lower the level by 10 % (`-`).
    Down,
    /// Show or hide the help (`?`, `h`; Esc hides it).
    Help,
    /// Hide the help.
    Dismiss,
}

/// The action of `key`, if it has one. Only presses count (some terminals report releases).
pub fn action(key: &KeyEvent) -> Option<Action> {
    if key.kind != KeyEventKind::Press {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('c') if ctrl => Some(Action::Stop),
        KeyCode::Char('q' | 'Q') => Some(Action::Stop),
        KeyCode::Char('p' | 'P' | ' ') => Some(Action::Pause),
        KeyCode::Char('+' | '=') | KeyCode::Up => Some(Action::Up),
        KeyCode::Char('-' | '_') | KeyCode::Down => Some(Action::Down),
        KeyCode::Char('?' | 'h') => Some(Action::Help),
        KeyCode::Esc => Some(Action::Dismiss),
        _ => None,
    }
}

/// The level one step up or down from `level`. A rate moves by 10 %, kept to hundredths so
/// that repeated steps show plain numbers (50 → 55 → 60.5); connections and users move to a
/// whole number, by at least one, and never below one.
pub fn stepped(knob: Knob, level: f64, up: bool) -> f64 {
    let next = if up { level * STEP } else { level / STEP };
    match knob {
        Knob::Rate => ((next * 100.0).round() / 100.0).max(0.01),
        Knob::Concurrency => {
            let level = level.round();
            let next = next.round();
            if up {
                next.max(level + 1.0)
            } else {
                next.min(level - 1.0).max(1.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_step_by_ten_percent() {
        let cases = [
            (Knob::Rate, 50.0, true, 55.0),
            (Knob::Rate, 55.0, true, 60.5),
            (Knob::Rate, 60.5, true, 66.55),
            (Knob::Rate, 55.0, false, 50.0),
            (Knob::Rate, 0.01, false, 0.01),
            (Knob::Concurrency, 100.0, true, 110.0),
            (Knob::Concurrency, 100.0, false, 91.0),
            (Knob::Concurrency, 3.0, true, 4.0),
            (Knob::Concurrency, 3.0, false, 2.0),
            (Knob::Concurrency, 1.0, false, 1.0),
        ];
        for (knob, level, up, want) in cases {
            assert_eq!(stepped(knob, level, up), want, "{knob:?} {level} up={up}");
        }
    }

    #[test]
    fn keys_map_to_actions() {
        let press = |code, modifiers| KeyEvent::new(code, modifiers);
        let none = KeyModifiers::NONE;
        assert_eq!(action(&press(KeyCode::Char('q'), none)), Some(Action::Stop));
        assert_eq!(
            action(&press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Stop)
        );
        assert_eq!(action(&press(KeyCode::Char('c'), none)), None);
        assert_eq!(action(&press(KeyCode::Char('+'), none)), Some(Action::Up));
        assert_eq!(action(&press(KeyCode::Char('-'), none)), Some(Action::Down));
        assert_eq!(
            action(&press(KeyCode::Char('p'), none)),
            Some(Action::Pause)
        );
        assert_eq!(action(&press(KeyCode::Char('?'), none)), Some(Action::Help));
        let mut release = press(KeyCode::Char('q'), none);
        release.kind = KeyEventKind::Release;
        assert_eq!(action(&release), None);
    }
}
