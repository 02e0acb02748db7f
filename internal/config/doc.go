// Package config is widejit's configuration: its keys and defaults, layered (lowest first)
// defaults < config file < WIDEJIT_* environment < flags into a viper.Viper, where each
// value came from, and the checks of every value (naming that source). The CLI binds its
// flags to it; the engine receives the values as engine.Config.
package config
