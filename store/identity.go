package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// KeyPrefix starts every Chorus API key (docs/rules.md §1.4).
const KeyPrefix = "cho_"

// keyRandomBytes is how much randomness a generated key carries (32 bytes = 256 bits).
const keyRandomBytes = 32

// GenerateKey returns a new plaintext API key: "cho_" followed by 32 random bytes, base64url.
func GenerateKey() string {
	b := make([]byte, keyRandomBytes)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ValidateKeyFormat checks a key an operator supplies (CHORUS_BOOTSTRAP_ADMIN_KEY): it must start
// with "cho_" and carry at least 32 bytes' worth of characters (43 base64url characters).
func ValidateKeyFormat(key string) error {
	if !strings.HasPrefix(key, KeyPrefix) {
		return fmt.Errorf("API key must start with %q", KeyPrefix)
	}
	rest := key[len(KeyPrefix):]
	if len(rest) < base64.RawURLEncoding.EncodedLen(keyRandomBytes) {
		return fmt.Errorf("API key must have at least %d characters after %q (32 random bytes, base64url); got %d",
			base64.RawURLEncoding.EncodedLen(keyRandomBytes), KeyPrefix, len(rest))
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("API key may only contain letters, digits, '-' and '_' after %q", KeyPrefix)
		}
	}
	return nil
}

// HashKey is the one-way hash stored for a key: SHA-256 of the whole plaintext, hex.
func HashKey(plaintext string) string {
	sum := sha256.Sum256([]byte(plaintext))
	return hex.EncodeToString(sum[:])
}

// DisplayPrefix is the part of a key shown in listings ("cho_" and 8 characters).
func DisplayPrefix(plaintext string) string {
	if len(plaintext) > 12 {
		return plaintext[:12]
	}
	return plaintext
}

// Errors of Authenticate; each becomes an HTTP 401 at the endpoint.
var (
	ErrKeyUnknown = errors.New("Invalid API key")
	ErrKeyRevoked = errors.New("API key has been revoked")
	ErrKeyExpired = errors.New("API key has expired")
)

// Authenticated is what a valid key resolves to.
type Authenticated struct {
	Key   APIKey
	Agent Agent
	Owner *User // nil for an ownerless agent
}

// Authenticate looks a plaintext key up by its hash and checks it is neither revoked nor
// expired (docs/rules.md §1.4). It returns ErrKeyUnknown, ErrKeyRevoked or ErrKeyExpired for a bad key.
func (s *Store) Authenticate(ctx context.Context, plaintext string) (*Authenticated, error) {
	var out Authenticated
	err := s.DB.NewSelect().Model(&out.Key).Where("key_hash = ?", HashKey(plaintext)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrKeyUnknown
	}
	if err != nil {
		return nil, err
	}
	now := Now()
	switch {
	case out.Key.RevokedAt != nil:
		return nil, ErrKeyRevoked
	case out.Key.ExpiresAt != nil && out.Key.ExpiresAt.Before(now):
		return nil, ErrKeyExpired
	}
	if err := s.DB.NewSelect().Model(&out.Agent).Where("uuid = ?", out.Key.AgentUUID).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrKeyUnknown
		}
		return nil, err
	}
	if out.Agent.OwnerUUID != nil {
		var u User
		err := s.DB.NewSelect().Model(&u).Where("uuid = ?", *out.Agent.OwnerUUID).Scan(ctx)
		if err == nil {
			out.Owner = &u
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
	}
	return &out, nil
}

// keyTouchInterval bounds how often a key's last_used_at is written: once a minute is precise
// enough for an operator and keeps a busy agent from turning every read into a write.
const keyTouchInterval = time.Minute

// TouchKey records that a key was just used, at most once per minute per key.
func (s *Store) TouchKey(ctx context.Context, key *APIKey) error {
	now := Now()
	if key.LastUsedAt != nil && now.Sub(*key.LastUsedAt) < keyTouchInterval {
		return nil
	}
	_, err := s.DB.NewUpdate().Model((*APIKey)(nil)).
		Set("last_used_at = ?", now).
		Where("uuid = ?", key.UUID).
		Exec(ctx)
	return err
}

// TouchAgent records that the agent just made an authenticated call (its lastActiveAt, which
// `chorus agent list` shows), at most once per minute per agent, like TouchKey.
func (s *Store) TouchAgent(ctx context.Context, agent *Agent) error {
	now := Now()
	if agent.LastActiveAt != nil && now.Sub(*agent.LastActiveAt) < keyTouchInterval {
		return nil
	}
	_, err := s.DB.NewUpdate().Model((*Agent)(nil)).Set("last_active_at = ?", now).Where("uuid = ?", agent.UUID).Exec(ctx)
	return err
}

// Bootstrap describes the first-start identity: one company, its owner user and an admin agent.
type Bootstrap struct {
	CompanyName string
	OwnerName   string
	OwnerEmail  string
	AgentName   string
	// Key is the admin agent's plaintext key; empty means generate one.
	Key string
}

// BootstrapResult says what Bootstrap found or made. Key is set only when Created is true.
type BootstrapResult struct {
	Created bool
	Company Company
	Owner   User
	Agent   Agent
	Key     string
}

// EnsureBootstrap creates the default company, owner user and admin agent with a key, once.
// When a company already exists it changes nothing and returns Created=false with the oldest
// company, its first user and its first admin agent (when they exist).
func (s *Store) EnsureBootstrap(ctx context.Context, b Bootstrap) (*BootstrapResult, error) {
	if b.Key == "" {
		b.Key = GenerateKey()
	} else if err := ValidateKeyFormat(b.Key); err != nil {
		return nil, err
	}
	var res BootstrapResult
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		err := tx.NewSelect().Model(&res.Company).Order("created_at ASC").Limit(1).Scan(ctx)
		if err == nil {
			if err := tx.NewSelect().Model(&res.Owner).Where("company_uuid = ?", res.Company.UUID).
				Order("created_at ASC").Limit(1).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			// Roles are JSON (jsonb on PostgreSQL): pick the first admin agent in Go, portably.
			var agents []Agent
			if err := tx.NewSelect().Model(&agents).Where("company_uuid = ?", res.Company.UUID).
				Order("created_at ASC").Scan(ctx); err != nil {
				return err
			}
			for _, a := range agents {
				if slices.Contains(a.Roles, "admin_agent") || slices.Contains(a.Roles, "admin") {
					res.Agent = a
					break
				}
			}
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		now := Now()
		res.Created = true
		res.Company = Company{UUID: NewUUID(), Name: b.CompanyName, EmailDomains: []string{}, CreatedAt: now, UpdatedAt: now}
		res.Owner = User{UUID: NewUUID(), CompanyUUID: res.Company.UUID, OIDCSub: "local:" + b.OwnerEmail,
			Email: &b.OwnerEmail, Name: &b.OwnerName, Role: RoleAdmin, CreatedAt: now}
		res.Agent = Agent{UUID: NewUUID(), CompanyUUID: res.Company.UUID, Name: b.AgentName,
			Roles: []string{"admin_agent"}, Permissions: []string{}, OwnerUUID: &res.Owner.UUID,
			CreatedAt: now, UpdatedAt: now}
		key := newKeyRow(res.Agent, b.Key, "bootstrap", nil, now)
		for _, m := range []any{&res.Company, &res.Owner, &res.Agent, &key} {
			if _, err := tx.NewInsert().Model(m).Exec(ctx); err != nil {
				return mapErr(err, "bootstrap row")
			}
		}
		res.Key = b.Key
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

func newKeyRow(a Agent, plaintext, name string, expiresAt *time.Time, now time.Time) APIKey {
	k := APIKey{UUID: NewUUID(), CompanyUUID: a.CompanyUUID, AgentUUID: a.UUID, KeyHash: HashKey(plaintext),
		KeyPrefix: DisplayPrefix(plaintext), ExpiresAt: expiresAt, CreatedAt: now}
	if name != "" {
		k.Name = &name
	}
	return k
}

// DefaultCompany returns the oldest company, creating "Default Company" when there is none, so
// the operator commands work on a freshly migrated database too.
func (s *Store) DefaultCompany(ctx context.Context) (*Company, error) {
	var c Company
	err := s.DB.NewSelect().Model(&c).Order("created_at ASC").Limit(1).Scan(ctx)
	if err == nil {
		return &c, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	now := Now()
	c = Company{UUID: NewUUID(), Name: "Default Company", EmailDomains: []string{}, CreatedAt: now, UpdatedAt: now}
	if _, err := s.DB.NewInsert().Model(&c).Exec(ctx); err != nil {
		return nil, mapErr(err, "Company")
	}
	return &c, nil
}

// CompanyOwner returns the company's first user (the owner made at bootstrap).
func (s *Store) CompanyOwner(ctx context.Context, companyUUID string) (*User, error) {
	var u User
	err := s.DB.NewSelect().Model(&u).Where("company_uuid = ?", companyUUID).Order("created_at ASC").Limit(1).Scan(ctx)
	if err != nil {
		return nil, mapErr(err, "User")
	}
	return &u, nil
}

// EnsureUser returns the company's user with this email, creating it (named name, or the email
// when name is empty) when there is none.
func (s *Store) EnsureUser(ctx context.Context, companyUUID, email, name string) (*User, error) {
	email = strings.TrimSpace(email)
	if email == "" || !strings.Contains(email, "@") {
		return nil, fmt.Errorf("owner email %q is not an email address", email)
	}
	var u User
	err := s.DB.NewSelect().Model(&u).Where("company_uuid = ?", companyUUID).
		Where("lower(email) = lower(?)", email).Limit(1).Scan(ctx)
	if err == nil {
		return &u, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if name == "" {
		name = email
	}
	u = User{UUID: NewUUID(), CompanyUUID: companyUUID, OIDCSub: "local:" + strings.ToLower(email),
		Email: &email, Name: &name, Role: RoleMember, CreatedAt: Now()}
	if _, err := s.DB.NewInsert().Model(&u).Exec(ctx); err != nil {
		return nil, mapErr(err, "User")
	}
	return &u, nil
}

// NewAgent is what CreateAgent needs. Roles must be canonical preset names and Permissions
// canonical "resource:action" strings (see package perm).
type NewAgent struct {
	// UUID is the new agent's uuid; "" makes a random one (a use case derives it from the
	// caller's requestId, so a retried create names the same agent).
	UUID        string
	CompanyUUID string
	Name        string
	Roles       []string
	Permissions []string
	OwnerUUID   *string
	Persona     *string
}

// CreateAgent inserts an agent and a first API key for it, returning both; the plaintext key
// exists only in the return value.
func (s *Store) CreateAgent(ctx context.Context, n NewAgent) (*Agent, string, error) {
	if strings.TrimSpace(n.Name) == "" {
		return nil, "", errors.New("agent name must not be empty")
	}
	if n.Roles == nil {
		n.Roles = []string{}
	}
	if n.Permissions == nil {
		n.Permissions = []string{}
	}
	now := Now()
	if n.UUID == "" {
		n.UUID = NewUUID()
	}
	a := Agent{UUID: n.UUID, CompanyUUID: n.CompanyUUID, Name: strings.TrimSpace(n.Name), Roles: n.Roles,
		Permissions: n.Permissions, OwnerUUID: n.OwnerUUID, Persona: n.Persona, CreatedAt: now, UpdatedAt: now}
	plaintext := GenerateKey()
	key := newKeyRow(a, plaintext, "", nil, now)
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(&a).Exec(ctx); err != nil {
			return mapErr(err, "Agent")
		}
		_, err := tx.NewInsert().Model(&key).Exec(ctx)
		return mapErr(err, "API key")
	})
	if err != nil {
		return nil, "", err
	}
	return &a, plaintext, nil
}

// AgentListing is one row of ListAgents.
type AgentListing struct {
	Agent
	OwnerEmail *string `bun:"owner_email"`
	ActiveKeys int     `bun:"active_keys"`
}

// ListAgents lists the company's agents, oldest first, with their owner's email and the number
// of keys that are neither revoked nor expired.
func (s *Store) ListAgents(ctx context.Context, companyUUID string) ([]AgentListing, error) {
	rows, _, err := s.ListAgentsOf(ctx, companyUUID, "", 0, 0)
	return rows, err
}

// ListAgentsOf lists one page of the company's agents (ownerUUID "": all of them; else the
// ones that user owns), oldest first, like ListAgents, and their total. limit 0: no limit.
func (s *Store) ListAgentsOf(ctx context.Context, companyUUID, ownerUUID string, limit, offset int) ([]AgentListing, int, error) {
	var rows []AgentListing
	now := Now()
	q := s.DB.NewSelect().Model(&rows).
		ModelTableExpr("agents AS agent").
		ColumnExpr("agent.*").
		ColumnExpr("u.email AS owner_email").
		ColumnExpr("(SELECT count(*) FROM api_keys k WHERE k.agent_uuid = agent.uuid AND k.revoked_at IS NULL "+
			"AND (k.expires_at IS NULL OR k.expires_at > ?)) AS active_keys", now).
		Join("LEFT JOIN users AS u ON u.uuid = agent.owner_uuid").
		Where("agent.company_uuid = ?", companyUUID).
		Order("agent.created_at ASC", "agent.uuid ASC")
	if ownerUUID != "" {
		q = q.Where("agent.owner_uuid = ?", ownerUUID)
	}
	if limit > 0 {
		q = q.Limit(int64(limit)).Offset(int64(offset))
	}
	total, err := q.ScanAndCount(ctx)
	return rows, int(total), err
}

// GetAgent returns one agent of the company.
func (s *Store) GetAgent(ctx context.Context, companyUUID, agentUUID string) (*Agent, error) {
	if !vocab.IsUUID(agentUUID) {
		return nil, NotFound("Agent")
	}
	var a Agent
	err := s.DB.NewSelect().Model(&a).Where("uuid = ?", agentUUID).Where("company_uuid = ?", companyUUID).Scan(ctx)
	if err != nil {
		return nil, mapErr(err, "Agent")
	}
	return &a, nil
}

// CreateKey adds a new key for an agent, optionally expiring, and returns the row and the
// plaintext (shown once).
func (s *Store) CreateKey(ctx context.Context, companyUUID, agentUUID, name string, expiresAt *time.Time) (*APIKey, string, error) {
	return s.CreateKeyWith(ctx, companyUUID, agentUUID, NewKey{Name: name, ExpiresAt: expiresAt})
}

// NewKey is what CreateKeyWith needs besides the agent.
type NewKey struct {
	// UUID is the key's uuid; "" makes a random one (see NewAgent.UUID).
	UUID      string
	Name      string
	ExpiresAt *time.Time
	// ReadOnly makes a key that calls only tools that change nothing (docs/rules.md §3.3).
	ReadOnly bool
}

// CreateKeyWith adds a new key for an agent and returns the row and the plaintext (shown once).
func (s *Store) CreateKeyWith(ctx context.Context, companyUUID, agentUUID string, n NewKey) (*APIKey, string, error) {
	a, err := s.GetAgent(ctx, companyUUID, agentUUID)
	if err != nil {
		return nil, "", err
	}
	plaintext := GenerateKey()
	k := newKeyRow(*a, plaintext, n.Name, n.ExpiresAt, Now())
	k.ReadOnly = n.ReadOnly
	if n.UUID != "" {
		k.UUID = n.UUID
	}
	if _, err := s.DB.NewInsert().Model(&k).Exec(ctx); err != nil {
		return nil, "", mapErr(err, "API key")
	}
	return &k, plaintext, nil
}

// ErrAmbiguousKey: a prefix given to RevokeKey matches more than one key.
var ErrAmbiguousKey = errors.New("more than one key starts with that prefix; give the key's uuid instead")

// RevokeKey revokes the company's key named by ref (see KeyByRef). Revoking a revoked key
// changes nothing.
func (s *Store) RevokeKey(ctx context.Context, companyUUID, ref string) (*APIKey, error) {
	k, err := s.KeyByRef(ctx, companyUUID, ref)
	if err != nil {
		return nil, err
	}
	if k.RevokedAt == nil {
		now := Now()
		k.RevokedAt = &now
		if _, err := s.DB.NewUpdate().Model(k).Column("revoked_at").WherePK().Exec(ctx); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// KeyByRef finds the company's key named by ref: its uuid, its display prefix (or any longer
// start of the key), or the whole plaintext key. None is "API key not found"; a prefix of
// several keys is ErrAmbiguousKey.
func (s *Store) KeyByRef(ctx context.Context, companyUUID, ref string) (*APIKey, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, NotFound("API key")
	}
	var keys []APIKey
	q := s.DB.NewSelect().Model(&keys).Where("company_uuid = ?", companyUUID)
	switch {
	case vocab.IsUUID(ref):
		q = q.Where("uuid = ?", ref)
	case strings.HasPrefix(ref, KeyPrefix) && len(ref) > 12:
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("key_hash = ?", HashKey(ref)).WhereOr("key_prefix = ?", DisplayPrefix(ref))
		})
	default:
		q = q.Where("substr(key_prefix, 1, ?) = ?", len(ref), ref)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, err
	}
	// A full plaintext identifies one key exactly even when display prefixes collide.
	if len(keys) > 1 && strings.HasPrefix(ref, KeyPrefix) {
		for _, k := range keys {
			if k.KeyHash == HashKey(ref) {
				keys = []APIKey{k}
				break
			}
		}
	}
	switch len(keys) {
	case 0:
		return nil, NotFound("API key")
	case 1:
		return &keys[0], nil
	}
	return nil, ErrAmbiguousKey
}

// KeyListing is one row of ListKeys.
type KeyListing struct {
	APIKey    `bun:",extend"`
	AgentName string `bun:"agent_name"`
}

// ListKeys lists the company's keys (optionally one agent's) with their agent's name, newest first.
func (s *Store) ListKeys(ctx context.Context, companyUUID, agentUUID string) ([]KeyListing, error) {
	var keys []KeyListing
	q := s.DB.NewSelect().Model(&keys).ColumnExpr("api_key.*").ColumnExpr("a.name AS agent_name").
		Join("JOIN agents AS a ON a.uuid = api_key.agent_uuid").Where("api_key.company_uuid = ?", companyUUID)
	if agentUUID != "" {
		q = q.Where("api_key.agent_uuid = ?", agentUUID)
	}
	err := q.Order("api_key.created_at DESC").Scan(ctx)
	return keys, err
}
