package store

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"
)

// The bun models, one per table of migrations/*/..._init. Nullable columns are pointers.

// Company is the tenant root (docs/rules.md §1.2).
type Company struct {
	bun.BaseModel `bun:"table:companies"`

	UUID         string    `bun:"uuid,pk"`
	Name         string    `bun:"name"`
	EmailDomains []string  `bun:"email_domains,type:jsonb"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`
}

// User is a human (docs/rules.md §1.2); agents act with their owner user's project access.
type User struct {
	bun.BaseModel `bun:"table:users"`

	UUID        string  `bun:"uuid,pk"`
	CompanyUUID string  `bun:"company_uuid"`
	OIDCSub     string  `bun:"oidc_sub"`
	Email       *string `bun:"email"`
	Name        *string `bun:"name"`
	AvatarURL   *string `bun:"avatar_url"`
	// Role is the person's company role: "admin" (manages people, every agent and key) or
	// "member" (their own agents). Project access is separate (docs/rules.md §6.3).
	Role      string    `bun:"role"`
	CreatedAt time.Time `bun:"created_at"`
}

// DisplayName is name, else email, else "Unknown" (docs/rules.md §1.2).
func (u *User) DisplayName() string {
	switch {
	case u.Name != nil && *u.Name != "":
		return *u.Name
	case u.Email != nil && *u.Email != "":
		return *u.Email
	}
	return "Unknown"
}

// Agent is an AI agent identity (docs/rules.md §1.3).
type Agent struct {
	bun.BaseModel `bun:"table:agents"`

	UUID         string     `bun:"uuid,pk"`
	CompanyUUID  string     `bun:"company_uuid"`
	Name         string     `bun:"name"`
	Roles        []string   `bun:"roles,type:jsonb"`
	Permissions  []string   `bun:"permissions,type:jsonb"`
	Persona      *string    `bun:"persona"`
	SystemPrompt *string    `bun:"system_prompt"`
	OwnerUUID    *string    `bun:"owner_uuid"`
	LastActiveAt *time.Time `bun:"last_active_at"`
	CreatedAt    time.Time  `bun:"created_at"`
	UpdatedAt    time.Time  `bun:"updated_at"`
}

// APIKey is a stored key (docs/rules.md §1.4): only the SHA-256 of the plaintext is kept.
type APIKey struct {
	bun.BaseModel `bun:"table:api_keys"`

	UUID        string     `bun:"uuid,pk"`
	CompanyUUID string     `bun:"company_uuid"`
	AgentUUID   string     `bun:"agent_uuid"`
	KeyHash     string     `bun:"key_hash"`
	KeyPrefix   string     `bun:"key_prefix"`
	Name        *string    `bun:"name"`
	LastUsedAt  *time.Time `bun:"last_used_at"`
	ExpiresAt   *time.Time `bun:"expires_at"`
	RevokedAt   *time.Time `bun:"revoked_at"`
	CreatedAt   time.Time  `bun:"created_at"`
	// ReadOnly keys call only tools that change nothing (docs/rules.md §3.3).
	ReadOnly bool `bun:"read_only"`
}

// ProjectGroup groups projects (docs/rules.md §1.5).
type ProjectGroup struct {
	bun.BaseModel `bun:"table:project_groups"`

	UUID          string    `bun:"uuid,pk"`
	CompanyUUID   string    `bun:"company_uuid"`
	Name          string    `bun:"name"`
	Description   string    `bun:"description"`
	Visibility    string    `bun:"visibility"`
	CreatedByUUID *string   `bun:"created_by_uuid"`
	AccessVersion int64     `bun:"access_version"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

// ProjectGroupMember is a user's role on a group (docs/rules.md §1.5).
type ProjectGroupMember struct {
	bun.BaseModel `bun:"table:project_group_members"`

	UUID        string    `bun:"uuid,pk"`
	CompanyUUID string    `bun:"company_uuid"`
	GroupUUID   string    `bun:"group_uuid"`
	UserUUID    string    `bun:"user_uuid"`
	Role        string    `bun:"role"`
	AddedByUUID *string   `bun:"added_by_uuid"`
	CreatedAt   time.Time `bun:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

// Project is a project (docs/rules.md §1.5).
type Project struct {
	bun.BaseModel `bun:"table:projects"`

	UUID          string  `bun:"uuid,pk"`
	CompanyUUID   string  `bun:"company_uuid"`
	Name          string  `bun:"name"`
	Description   *string `bun:"description"`
	GroupUUID     *string `bun:"group_uuid"`
	Visibility    string  `bun:"visibility"`
	CreatedByUUID *string `bun:"created_by_uuid"`
	// ClaimTTLSeconds gives task claims in the project a time to live (docs/rules.md §5.10); nil:
	// claims last until released.
	ClaimTTLSeconds *int64    `bun:"claim_ttl_seconds"`
	CreatedAt       time.Time `bun:"created_at"`
	UpdatedAt       time.Time `bun:"updated_at"`
}

// ProjectMember is a user's role on a project (docs/rules.md §1.5).
type ProjectMember struct {
	bun.BaseModel `bun:"table:project_members"`

	UUID        string    `bun:"uuid,pk"`
	CompanyUUID string    `bun:"company_uuid"`
	ProjectUUID string    `bun:"project_uuid"`
	UserUUID    string    `bun:"user_uuid"`
	Role        string    `bun:"role"`
	AddedByUUID *string   `bun:"added_by_uuid"`
	CreatedAt   time.Time `bun:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

// Activity is one append-only audit row (docs/rules.md §1.14, §7.1).
type Activity struct {
	bun.BaseModel `bun:"table:activities"`

	UUID        string          `bun:"uuid,pk"`
	CompanyUUID string          `bun:"company_uuid"`
	ProjectUUID string          `bun:"project_uuid"`
	TargetType  string          `bun:"target_type"`
	TargetUUID  string          `bun:"target_uuid"`
	ActorType   string          `bun:"actor_type"`
	ActorUUID   string          `bun:"actor_uuid"`
	Action      string          `bun:"action"`
	Value       json.RawMessage `bun:"value,type:jsonb"`
	SessionUUID *string         `bun:"session_uuid"`
	SessionName *string         `bun:"session_name"`
	CreatedAt   time.Time       `bun:"created_at"`
}

// Notification is one notification for a user or agent (docs/rules.md §1.15).
type Notification struct {
	bun.BaseModel `bun:"table:notifications"`

	UUID          string     `bun:"uuid,pk"`
	CompanyUUID   string     `bun:"company_uuid"`
	ProjectUUID   *string    `bun:"project_uuid"`
	RecipientType string     `bun:"recipient_type"`
	RecipientUUID string     `bun:"recipient_uuid"`
	EntityType    string     `bun:"entity_type"`
	EntityUUID    string     `bun:"entity_uuid"`
	EntityTitle   string     `bun:"entity_title"`
	ProjectName   string     `bun:"project_name"`
	Action        string     `bun:"action"`
	Message       string     `bun:"message"`
	ActorType     string     `bun:"actor_type"`
	ActorUUID     string     `bun:"actor_uuid"`
	ActorName     string     `bun:"actor_name"`
	ReadAt        *time.Time `bun:"read_at"`
	ArchivedAt    *time.Time `bun:"archived_at"`
	CreatedAt     time.Time  `bun:"created_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`
}

// ToolRequest remembers the outcome of a mutating tool call that carried a requestId (docs/rules.md §8.5).
type ToolRequest struct {
	bun.BaseModel `bun:"table:tool_requests"`

	AgentUUID string `bun:"agent_uuid,pk"`
	RequestID string `bun:"request_id,pk"`
	Tool      string `bun:"tool"`
	ArgsHash  string `bun:"args_hash"`
	State     string `bun:"state"`
	// Generation counts refusals of this requestId: each moves later calls to a fresh update id.
	Generation int `bun:"generation"`
	// Result is the JSON the call answered, kept as text so a retry answers it byte for byte.
	Result    json.RawMessage `bun:"result"`
	CreatedAt time.Time       `bun:"created_at"`
	// RunningUntil is when the lease of the call running this row lapses unless renewed; nil
	// when no call holds it (see BeginToolRequest).
	RunningUntil *time.Time `bun:"running_until"`
	// RunningBy identifies the call holding the lease (a random uuid per call); nil with it.
	RunningBy *string `bun:"running_by"`
	// Existed: BeginToolRequest found the row made by an earlier call rather than making it.
	Existed bool `bun:"-"`
}
