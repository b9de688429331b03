package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// The company roles of a person (users.role).
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// ConsoleSession is a person's signed-in console session (console_sessions). The browser holds
// the token; the row holds its SHA-256 digest, so a database reader cannot sign in with it.
type ConsoleSession struct {
	bun.BaseModel `bun:"table:console_sessions"`

	TokenHash   string    `bun:"token_hash,pk"`
	CompanyUUID string    `bun:"company_uuid"`
	UserUUID    string    `bun:"user_uuid"`
	CreatedAt   time.Time `bun:"created_at"`
	ExpiresAt   time.Time `bun:"expires_at"`
	LastSeenAt  time.Time `bun:"last_seen_at"`
}

// LoginLink is a one-time sign-in link (login_links), stored as the digest of its token.
type LoginLink struct {
	bun.BaseModel `bun:"table:login_links"`

	TokenHash   string     `bun:"token_hash,pk"`
	CompanyUUID string     `bun:"company_uuid"`
	UserUUID    string     `bun:"user_uuid"`
	CreatedAt   time.Time  `bun:"created_at"`
	ExpiresAt   time.Time  `bun:"expires_at"`
	UsedAt      *time.Time `bun:"used_at"`
}

// ErrNoSession is what SessionUser answers for a token that names no live session: unknown,
// ended (signed out) or expired. The console sends the browser to sign in.
var ErrNoSession = errors.New("no such session: sign in again")

// ErrLinkUnusable is what ConsumeLoginLink answers for a link that is unknown, already used or
// expired; the three are not told apart, so a guesser learns nothing.
var ErrLinkUnusable = errors.New("this sign-in link is unknown, used or expired: ask for a new one (chorus user login-link)")

// newToken is a fresh random token: 32 bytes, base64url, with the given prefix.
func newToken(prefix string) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// CreateUser adds a person to the company: email (required, unique per company, case-insensitive),
// display name (the email when empty) and role (RoleAdmin or RoleMember). A duplicate email is
// ErrConflict; a bad email or role is an error naming the field.
func (s *Store) CreateUser(ctx context.Context, companyUUID, email, name, role string) (*User, error) {
	email = strings.TrimSpace(email)
	if at := strings.IndexByte(email, '@'); at <= 0 || at == len(email)-1 || strings.ContainsAny(email, " \t\r\n") {
		return nil, fmt.Errorf("email: %q is not an e-mail address (name@example.com)", email)
	}
	if role != RoleAdmin && role != RoleMember {
		return nil, fmt.Errorf("role: must be %q or %q, got %q", RoleAdmin, RoleMember, role)
	}
	if _, err := s.UserByEmail(ctx, companyUUID, email); err == nil {
		return nil, fmt.Errorf("%w: a user with e-mail %s already exists", ErrConflict, email)
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if strings.TrimSpace(name) == "" {
		name = email
	}
	u := User{UUID: NewUUID(), CompanyUUID: companyUUID, OIDCSub: "local:" + strings.ToLower(email),
		Email: &email, Name: &name, Role: role, CreatedAt: Now()}
	if _, err := s.DB.NewInsert().Model(&u).Exec(ctx); err != nil {
		return nil, mapErr(err, "User")
	}
	return &u, nil
}

// UserByEmail is the company's user with this e-mail (case-insensitive), or ErrNotFound.
func (s *Store) UserByEmail(ctx context.Context, companyUUID, email string) (*User, error) {
	var u User
	err := s.DB.NewSelect().Model(&u).Where("company_uuid = ?", companyUUID).
		Where("lower(email) = lower(?)", strings.TrimSpace(email)).OrderExpr("created_at").Limit(1).Scan(ctx)
	if err != nil {
		return nil, mapErr(err, "User")
	}
	return &u, nil
}

// UserByUUID is the user with this uuid, or ErrNotFound.
func (s *Store) UserByUUID(ctx context.Context, uuid string) (*User, error) {
	var u User
	if err := s.DB.NewSelect().Model(&u).Where("uuid = ?", uuid).Scan(ctx); err != nil {
		return nil, mapErr(err, "User")
	}
	return &u, nil
}

// ListUsers is the company's people, oldest first.
func (s *Store) ListUsers(ctx context.Context, companyUUID string) ([]User, error) {
	var us []User
	err := s.DB.NewSelect().Model(&us).Where("company_uuid = ?", companyUUID).OrderExpr("created_at, uuid").Scan(ctx)
	return us, err
}

// CreateLoginLink issues a one-time sign-in token for the user, valid for ttl. Only its digest is
// stored; the token is in the return value alone.
func (s *Store) CreateLoginLink(ctx context.Context, u *User, ttl time.Duration) (string, error) {
	token := newToken("chl_")
	now := Now()
	l := LoginLink{TokenHash: HashKey(token), CompanyUUID: u.CompanyUUID, UserUUID: u.UUID, CreatedAt: now,
		ExpiresAt: now.Add(ttl)}
	if _, err := s.DB.NewInsert().Model(&l).Exec(ctx); err != nil {
		return "", err
	}
	return token, nil
}

// ConsumeLoginLink marks the link used and returns its user. One statement decides, so two
// browsers racing on one link cannot both sign in: the second gets ErrLinkUnusable.
func (s *Store) ConsumeLoginLink(ctx context.Context, token string) (*User, error) {
	now := Now()
	var l LoginLink
	err := s.DB.NewUpdate().Model(&l).Set("used_at = ?", now).
		Where("token_hash = ?", HashKey(token)).Where("used_at IS NULL").Where("expires_at > ?", now).
		Returning("user_uuid").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && l.UserUUID == "") {
		return nil, ErrLinkUnusable
	}
	if err != nil {
		return nil, err
	}
	return s.UserByUUID(ctx, l.UserUUID)
}

// StartConsoleSession starts a console session for the user, lasting ttl, and returns its token (for
// the cookie; only its digest is stored).
func (s *Store) StartConsoleSession(ctx context.Context, u *User, ttl time.Duration) (string, error) {
	token := newToken("chs_")
	now := Now()
	row := ConsoleSession{TokenHash: HashKey(token), CompanyUUID: u.CompanyUUID, UserUUID: u.UUID, CreatedAt: now,
		ExpiresAt: now.Add(ttl), LastSeenAt: now}
	if _, err := s.DB.NewInsert().Model(&row).Exec(ctx); err != nil {
		return "", err
	}
	return token, nil
}

// ConsoleSessionUser is the person a live session token belongs to, or ErrNoSession. It notes the time
// as the session's last use at most once a minute.
func (s *Store) ConsoleSessionUser(ctx context.Context, token string) (*User, *ConsoleSession, error) {
	var row ConsoleSession
	err := s.DB.NewSelect().Model(&row).Where("token_hash = ?", HashKey(token)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ErrNoSession
	}
	if err != nil {
		return nil, nil, err
	}
	now := Now()
	if !now.Before(row.ExpiresAt) {
		return nil, nil, ErrNoSession
	}
	u, err := s.UserByUUID(ctx, row.UserUUID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, ErrNoSession
	}
	if err != nil {
		return nil, nil, err
	}
	if now.Sub(row.LastSeenAt) > time.Minute {
		row.LastSeenAt = now
		_, _ = s.DB.NewUpdate().Model(&row).Column("last_seen_at").WherePK().Exec(ctx)
	}
	return u, &row, nil
}

// EndConsoleSession deletes the session of this token: the cookie stops working in every browser that
// holds a copy of it. Ending an unknown session is not an error.
func (s *Store) EndConsoleSession(ctx context.Context, token string) error {
	_, err := s.DB.NewDelete().Model((*ConsoleSession)(nil)).Where("token_hash = ?", HashKey(token)).Exec(ctx)
	return err
}

// EndUserConsoleSessions deletes every console session of the user (sign out everywhere) and returns
// how many there were.
func (s *Store) EndUserConsoleSessions(ctx context.Context, userUUID string) (int64, error) {
	res, err := s.DB.NewDelete().Model((*ConsoleSession)(nil)).Where("user_uuid = ?", userUUID).Exec(ctx)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
